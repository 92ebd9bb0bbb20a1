// subscriptions/listen over a legacy upstream. A legacy server pushes change
// notifications on its session's standalone GET stream (one per session), and
// resource updates only after resources/subscribe. So each pooled session gets
// one hub: it opens that GET stream while anyone listens, fans notifications out
// to the listens whose filter asks for them (stamped with their subscriptionId),
// and reference-counts resources/subscribe per URI.
import { taskUpstream } from "../tasks/task-id.js";
import type { Logger } from "../log/logger.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { META, type ModernRequest } from "../protocol/modern-request.js";
import type { UpstreamClient } from "../upstream/client.js";
import {
  isSessionLost,
  LegacySessionPool,
  type LegacySession,
  type SessionLease,
  type SessionSpec,
} from "./legacy-sessions.js";
import { sseEvents } from "../upstream/sse-reader.js";
import { isTasksDeclared, missingTasksCapability } from "../protocol/tasks-extension.js";
import type { TaskEngine } from "../tasks/engine.js";
import { detailedTask, TERMINAL } from "../tasks/task.js";
import { ClientLeg } from "../calls/client-leg.js";
import type { Caller } from "../calls/caller.js";
import { sessionSpec } from "./session-spec.js";
import { invalidParams, noClientRequest, storeUnavailable } from "../protocol/errors.js";
import { legacyCallFault } from "./call-fault.js";

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

const UPSTREAM_FILTER_KEYS = [
  "toolsListChanged",
  "promptsListChanged",
  "resourcesListChanged",
  "resourceSubscriptions",
] as const;

const RECONNECT_MS = 1_000;
/** How long a new listen waits for the upstream event stream before it is acknowledged anyway. */
const READY_TIMEOUT_MS = 10_000;

/** The task store failed while a listen was being set up (not the upstream). */
class StoreFailure extends Error {
  override readonly name = "StoreFailure";
}

function storeFailed(err: unknown): never {
  throw new StoreFailure((err as Error).message);
}

/**
 * One per pooled session key. It follows the session: when the upstream forgets
 * it (404, or 400 naming the session), the hub takes the pool's replacement,
 * subscribes every URI in use again, and reopens the GET stream.
 */
class SessionHub {
  readonly listeners = new Set<Listener>();
  private readonly subscriptions = new Map<string, number>();
  private controller: AbortController | undefined;
  /** The session whose event stream this hub reads, held busy while anyone listens. */
  private lease: SessionLease | undefined;
  private ready: Promise<void> | undefined;

  private get session(): LegacySession | undefined {
    return this.lease?.session;
  }

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly pool: LegacySessionPool,
    private readonly spec: SessionSpec,
    private readonly log: Logger,
    private readonly onEmpty: () => void,
  ) {}

  /** Resolves once the upstream stream is open and the listener's URIs are subscribed. */
  async add(listener: Listener): Promise<void> {
    this.listeners.add(listener);
    if (!this.controller) {
      this.controller = new AbortController();
      let markReady!: () => void;
      this.ready = new Promise<void>((r) => (markReady = r));
      void this.run(this.controller.signal, markReady);
    }
    await Promise.race([this.ready, new Promise((r) => setTimeout(r, READY_TIMEOUT_MS).unref())]);
    await Promise.all((listener.filter.resourceSubscriptions ?? []).map((uri) => this.subscribe(uri)));
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
    this.lease?.release();
    this.lease = undefined;
    this.onEmpty();
  }

  private async rpc(method: string, params: JsonObject): Promise<void> {
    // The stream loop notices a dead upstream; a failed subscribe is retried on the next session.
    if (this.session) await this.pool.request(this.session, method, params);
  }

  private async subscribe(uri: string): Promise<void> {
    const n = this.subscriptions.get(uri) ?? 0;
    this.subscriptions.set(uri, n + 1);
    if (n === 0) await this.rpc("resources/subscribe", { uri });
  }

  private unsubscribe(uri: string): void {
    const n = (this.subscriptions.get(uri) ?? 1) - 1;
    if (n > 0) {
      this.subscriptions.set(uri, n);
      return;
    }
    this.subscriptions.delete(uri);
    if (this.listeners.size > 0) void this.rpc("resources/unsubscribe", { uri });
  }

  private async run(signal: AbortSignal, markReady: () => void): Promise<void> {
    let retriedLost = false;
    while (!signal.aborted) {
      try {
        const lease = await this.pool.lease(this.spec, signal);
        const session = lease.session;
        if (session === this.session || signal.aborted) lease.release();
        else {
          const renewed = this.lease !== undefined;
          this.lease?.release();
          this.lease = lease;
          // A new session knows nothing of our subscriptions.
          if (renewed)
            await Promise.all([...this.subscriptions.keys()].map((uri) => this.rpc("resources/subscribe", { uri })));
        }
        const res = await this.upstream.request({
          method: "GET",
          search: "",
          headers: [...session.headers(), "accept", "text/event-stream"],
          signal,
        });
        if (res.statusCode === 200) {
          retriedLost = false;
          markReady();
          await sseEvents(res.body, (event) => this.dispatch(session, event.data));
        } else {
          const text = await res.body.text();
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          if (isSessionLost(res.statusCode, body)) {
            this.pool.invalidate(session);
            // Right away once; an upstream that keeps refusing gets the usual back-off below.
            if (!retriedLost) {
              retriedLost = true;
              continue;
            }
          } else {
            this.log.warn("upstream refused the session event stream", { status: res.statusCode });
          }
          markReady();
        }
      } catch {
        // Aborted, or the upstream dropped the stream: reconnect below while anyone listens.
        markReady();
      }
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, RECONNECT_MS).unref());
    }
  }

  private dispatch(session: LegacySession, data: string): void {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (!isRecord(message) || typeof message.method !== "string") return;
    if ("id" in message && (typeof message.id === "string" || typeof message.id === "number")) {
      // A server→client request outside any call (e.g. roots/list after initialized) has no client to ask.
      const answer = message.method === "ping" ? { result: {} } : { error: noClientRequest() };
      void this.pool.send(session, { jsonrpc: "2.0", id: message.id, ...answer });
      return;
    }
    for (const l of this.listeners) if (wants(l.filter, message)) l.deliver(message);
  }
}

export class LegacyListens {
  private readonly hubs = new Map<string, SessionHub>();
  private readonly active = new Map<string, () => void>();

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly pool: LegacySessionPool,
    private readonly keepAliveMs: number,
    private readonly log: Logger,
    private readonly tasks: TaskEngine,
    private readonly gatewayInfo: JsonObject,
  ) {}

  private hubFor(spec: SessionSpec): SessionHub {
    const key = LegacySessionPool.keyOf(spec);
    let hub = this.hubs.get(key);
    if (!hub) {
      hub = new SessionHub(this.upstream, this.pool, spec, this.log, () => this.hubs.delete(key));
      this.hubs.set(key, hub);
    }
    return hub;
  }

  async open(req: ModernRequest, caller: Caller): Promise<Response> {
    const leg = new ClientLeg(req.id, undefined, caller.signal, this.keepAliveMs);
    try {
      return await this.openOn(leg, req, caller, sessionSpec(req, caller));
    } catch (err) {
      // A listen that could not start must not leave its leg (and keep-alive timer) behind.
      const fault = err instanceof StoreFailure ? storeUnavailable() : legacyCallFault(err, this.upstream.name);
      leg.error(fault.error, fault.status, fault.headers);
      return leg.response;
    }
  }

  private async openOn(leg: ClientLeg, req: ModernRequest, caller: Caller, spec: SessionSpec): Promise<Response> {
    const requested = req.params.notifications;
    if (!isRecord(requested)) {
      const fault = invalidParams("subscriptions/listen requires params.notifications");
      leg.error(fault.error, fault.status);
      return leg.response;
    }
    const wantsTasks = requested.taskIds !== undefined;
    if (wantsTasks && !isTasksDeclared(req.envelope.clientCapabilities)) {
      const fault = missingTasksCapability("Task notifications need the tasks extension");
      leg.error(fault.error, fault.status);
      return leg.response;
    }
    // Only change notifications need the upstream; a listen for tasks alone is the gateway's business.
    const wantsUpstream = UPSTREAM_FILTER_KEYS.some((k) => requested[k] !== undefined);
    const session = wantsUpstream ? await this.pool.acquire(spec, caller.signal) : undefined;
    const filter: Filter = session ? honoured(requested, session.init.capabilities) : {};
    const taskIds = wantsTasks ? await this.ownedTasks(requested.taskIds, caller.caller).catch(storeFailed) : [];
    const subscriptionId = req.id;
    const stamp = (message: JsonObject): JsonObject => {
      const params = isRecord(message.params) ? message.params : {};
      const meta = isRecord(params._meta) ? params._meta : {};
      return {
        jsonrpc: "2.0",
        method: message.method,
        params: { ...params, _meta: { ...meta, [META.subscriptionId]: subscriptionId } },
      };
    };
    const serverInfo = session?.init.serverInfo ?? this.gatewayInfo;
    const end = (): void =>
      leg.result({
        resultType: "complete",
        _meta: { [META.subscriptionId]: subscriptionId, [META.serverInfo]: serverInfo },
      });
    const acknowledged: JsonObject = { ...filter, ...(wantsTasks && { taskIds }) };
    const ack = (): void =>
      leg.notify(
        stamp({ method: "notifications/subscriptions/acknowledged", params: { notifications: acknowledged } }),
      );
    if (Object.keys(filter).length === 0 && taskIds.length === 0) {
      ack();
      end();
      return leg.response;
    }
    let acked = false;
    // Nothing may precede the acknowledgement on the stream.
    const deliver = (m: JsonObject): void => {
      if (acked) leg.notify(stamp(m));
    };
    const listener: Listener = { filter, deliver };
    const hub = Object.keys(filter).length > 0 ? this.hubFor(spec) : undefined;
    // Acknowledged only once the upstream stream is open and the URIs are subscribed: a change right after the ack is seen.
    if (hub) await hub.add(listener);
    // Subscribed (on every replica's changes, with a shared store) before the ack, so no change after it is missed.
    const watching = await Promise.allSettled(
      taskIds.map((id) =>
        this.tasks.watch(id, (detailed) =>
          deliver({ method: "notifications/tasks", params: JSON.parse(detailed) as JsonObject }),
        ),
      ),
    );
    const unwatch = watching.flatMap((w) => (w.status === "fulfilled" ? [w.value] : []));
    const failed = watching.find((w) => w.status === "rejected");
    if (failed) {
      // Half a listen is no listen: let go of what was taken, and say the store is the trouble.
      hub?.remove(listener);
      for (const u of unwatch) u();
      storeFailed(failed.reason);
    }
    ack();
    acked = true;
    // A task that ended between the ownership check and the subscription pushed its end to nobody:
    // read once more now that we listen, and send what a listener would have heard.
    const ended = await Promise.all(taskIds.map((id) => this.tasks.get(id, caller.caller).catch(() => undefined)));
    for (const task of ended) {
      if (task && TERMINAL.has(task.status))
        deliver({ method: "notifications/tasks", params: detailedTask(task.record) });
    }
    const key = `${caller.caller}\0${JSON.stringify(req.id)}`;
    const stop = (): void => {
      cleanup();
      end();
    };
    const cleanup = (): void => {
      // Only this listen's own entry: a later listen with the same id must not lose its registration.
      if (this.active.get(key) === stop) this.active.delete(key);
      hub?.remove(listener);
      for (const u of unwatch) u();
    };
    if (leg.closed) {
      cleanup();
      return leg.response;
    }
    leg.onClose(cleanup);
    // leg.result() clears close listeners, so a graceful end cleans up explicitly.
    this.active.get(key)?.();
    this.active.set(key, stop);
    return leg.response;
  }

  /** The requested task ids this caller owns; others are silently not acknowledged. */
  private async ownedTasks(ids: unknown, caller: string): Promise<string[]> {
    if (!Array.isArray(ids)) return [];
    // Only this upstream's tasks are reported on its route (task-id.ts); another's are as unknown as made-up ids.
    const name = this.upstream.name;
    const unique = [...new Set(ids.filter((v): v is string => typeof v === "string" && taskUpstream(v) === name))];
    const owned = await Promise.all(unique.map(async (id) => ((await this.tasks.get(id, caller)) ? id : undefined)));
    return owned.filter((v): v is string => v !== undefined);
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
