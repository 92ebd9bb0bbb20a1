// subscriptions/listen over a legacy upstream. A legacy server pushes change
// notifications on its session's standalone GET stream (one per session), and
// resource updates only after resources/subscribe. So each pooled session gets
// one hub: it opens that GET stream while anyone listens, fans notifications out
// to the listens whose filter asks for them (stamped with their subscriptionId),
// and reference-counts resources/subscribe per URI.
import type { Logger } from "../log/logger.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { JSONRPC_INVALID_PARAMS, JSONRPC_METHOD_NOT_FOUND } from "../protocol/jsonrpc.js";
import { META, type ModernRequest } from "../protocol/modern-request.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { LegacySession, LegacySessionPool, SessionSpec } from "../upstream/legacy-sessions.js";
import { postRpc } from "../upstream/rpc.js";
import { readSse } from "../upstream/sse-parser.js";
import { ClientLeg } from "./client-leg.js";
import type { CallerContext } from "./legacy-bridge.js";

interface Filter {
  toolsListChanged?: true;
  promptsListChanged?: true;
  resourcesListChanged?: true;
  resourceSubscriptions?: string[];
}

interface Listener {
  filter: Filter;
  deliver(message: JsonObject): void;
}

function wants(filter: Filter, message: JsonObject): boolean {
  switch (message.method) {
    case "notifications/tools/list_changed":
      return filter.toolsListChanged === true;
    case "notifications/prompts/list_changed":
      return filter.promptsListChanged === true;
    case "notifications/resources/list_changed":
      return filter.resourcesListChanged === true;
    case "notifications/resources/updated": {
      const uri = isRecord(message.params) ? message.params.uri : undefined;
      return typeof uri === "string" && (filter.resourceSubscriptions ?? []).includes(uri);
    }
    default:
      return false;
  }
}

/** The subset of the requested filter this upstream can honour, from its initialize capabilities. */
function honoured(requested: JsonObject, caps: JsonObject): Filter {
  const cap = (name: string): JsonObject => (isRecord(caps[name]) ? caps[name] : {});
  const out: Filter = {};
  if (requested.toolsListChanged === true && cap("tools").listChanged === true) out.toolsListChanged = true;
  if (requested.promptsListChanged === true && cap("prompts").listChanged === true) out.promptsListChanged = true;
  if (requested.resourcesListChanged === true && cap("resources").listChanged === true) out.resourcesListChanged = true;
  const uris = Array.isArray(requested.resourceSubscriptions)
    ? requested.resourceSubscriptions.filter((u): u is string => typeof u === "string")
    : [];
  if (uris.length > 0 && cap("resources").subscribe === true) out.resourceSubscriptions = [...new Set(uris)];
  return out;
}

const RECONNECT_MS = 1_000;

class SessionHub {
  readonly listeners = new Set<Listener>();
  private readonly subscriptions = new Map<string, number>();
  private controller: AbortController | undefined;

  constructor(
    private readonly upstream: UpstreamClient,
    readonly session: LegacySession,
    private readonly log: Logger,
    private readonly onEmpty: () => void,
  ) {}

  add(listener: Listener): void {
    this.listeners.add(listener);
    if (!this.controller) {
      this.session.active += 1;
      this.controller = new AbortController();
      void this.read(this.controller.signal);
    }
    for (const uri of listener.filter.resourceSubscriptions ?? []) this.subscribe(uri);
  }

  remove(listener: Listener): void {
    if (!this.listeners.delete(listener)) return;
    for (const uri of listener.filter.resourceSubscriptions ?? []) this.unsubscribe(uri);
    if (this.listeners.size === 0) this.stop();
  }

  stop(): void {
    if (!this.controller) return;
    this.controller.abort();
    this.controller = undefined;
    this.session.active = Math.max(0, this.session.active - 1);
    this.onEmpty();
  }

  private rpc(method: string, params: JsonObject): void {
    void postRpc(this.upstream, this.session.headers(), { jsonrpc: "2.0", id: this.session.nextId(), method, params }, AbortSignal.timeout(10_000)).then(
      (a) => a.discard(),
      () => undefined,
    );
  }

  private subscribe(uri: string): void {
    const n = this.subscriptions.get(uri) ?? 0;
    this.subscriptions.set(uri, n + 1);
    if (n === 0) this.rpc("resources/subscribe", { uri });
  }

  private unsubscribe(uri: string): void {
    const n = (this.subscriptions.get(uri) ?? 1) - 1;
    if (n > 0) {
      this.subscriptions.set(uri, n);
      return;
    }
    this.subscriptions.delete(uri);
    if (this.listeners.size > 0) this.rpc("resources/unsubscribe", { uri });
  }

  private async read(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const res = await this.upstream.request({
          method: "GET",
          search: "",
          headers: [...this.session.headers(), "accept", "text/event-stream"],
          signal,
        });
        if (res.statusCode !== 200) {
          await res.body.dump();
          this.log.warn("upstream refused the session event stream", { status: res.statusCode });
        } else {
          for await (const event of readSse(res.body as AsyncIterable<Uint8Array>)) this.dispatch(event.data);
        }
      } catch {
        // Aborted, or the upstream dropped the stream: reconnect below while anyone listens.
      }
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, RECONNECT_MS).unref());
    }
  }

  private dispatch(data: string): void {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (!isRecord(message) || typeof message.method !== "string") return;
    if ("id" in message && (typeof message.id === "string" || typeof message.id === "number")) {
      // A server→client request outside any call (e.g. roots/list after initialized) has no client to ask.
      const answer =
        message.method === "ping"
          ? { result: {} }
          : { error: { code: JSONRPC_METHOD_NOT_FOUND, message: "No client request to relay this to" } };
      void postRpc(this.upstream, this.session.headers(), { jsonrpc: "2.0", id: message.id, ...answer }, AbortSignal.timeout(10_000)).then(
        (a) => a.discard(),
        () => undefined,
      );
      return;
    }
    for (const l of this.listeners) if (wants(l.filter, message)) l.deliver(message);
  }
}

export class LegacyListens {
  private readonly hubs = new Map<LegacySession, SessionHub>();
  private readonly active = new Map<string, () => void>();

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly pool: LegacySessionPool,
    private readonly keepAliveMs: number,
    private readonly log: Logger,
  ) {}

  private hubFor(session: LegacySession): SessionHub {
    let hub = this.hubs.get(session);
    if (!hub) {
      hub = new SessionHub(this.upstream, session, this.log, () => this.hubs.delete(session));
      this.hubs.set(session, hub);
    }
    return hub;
  }

  async open(req: ModernRequest, caller: CallerContext, spec: SessionSpec): Promise<Response> {
    const requested = req.params.notifications;
    const leg = new ClientLeg(req.id, undefined, caller.signal, this.keepAliveMs);
    if (!isRecord(requested)) {
      leg.error({ code: JSONRPC_INVALID_PARAMS, message: "subscriptions/listen requires params.notifications" });
      return leg.response;
    }
    const session = await this.pool.acquire(spec, caller.signal);
    const filter = honoured(requested, session.init.capabilities);
    const subscriptionId = req.id;
    const stamp = (message: JsonObject): JsonObject => {
      const params = isRecord(message.params) ? message.params : {};
      const meta = isRecord(params._meta) ? params._meta : {};
      return { jsonrpc: "2.0", method: message.method, params: { ...params, _meta: { ...meta, [META.subscriptionId]: subscriptionId } } };
    };
    // The acknowledgement comes first, with the honoured subset.
    leg.notify(stamp({ method: "notifications/subscriptions/acknowledged", params: { notifications: filter } }));
    const end = (): void =>
      leg.result({
        resultType: "complete",
        _meta: { [META.subscriptionId]: subscriptionId, [META.serverInfo]: session.init.serverInfo },
      });
    if (Object.keys(filter).length === 0) {
      end();
      return leg.response;
    }
    const listener: Listener = { filter, deliver: (m) => leg.notify(stamp(m)) };
    const hub = this.hubFor(session);
    hub.add(listener);
    const key = `${caller.caller}\0${JSON.stringify(req.id)}`;
    this.active.set(key, end);
    const cleanup = (): void => {
      this.active.delete(key);
      hub.remove(listener);
    };
    leg.onClose(cleanup);
    // leg.result() clears close listeners, so a graceful end cleans up explicitly.
    this.active.set(key, () => {
      cleanup();
      end();
    });
    return leg.response;
  }

  /** notifications/cancelled from the client for one of its listens. */
  cancel(caller: string, requestId: unknown): boolean {
    const key = `${caller}\0${JSON.stringify(requestId)}`;
    const end = this.active.get(key);
    if (!end) return false;
    end();
    return true;
  }

  close(): void {
    for (const end of [...this.active.values()]) end();
    for (const hub of [...this.hubs.values()]) hub.stop();
  }
}
