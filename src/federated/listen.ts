// subscriptions/listen on a federated endpoint: one stream to the client over one listen per member.
//   - Each member gets the part of the filter that is its own: the list kinds (every member), the resources it
//     listed (by the URI it gave), its tasks (by id). Its listen goes to its route, under the client's
//     credentials, so the route serves it as it would the client (a legacy member's session GET stream, a modern
//     member's own listen, the gateway's task notifications).
//   - The client is acknowledged once every member acknowledged or federation.listTimeoutMs passed, with what
//     the members honoured; a member that was down joins when it comes back.
//   - List changes go through the endpoint's change feed (federation/change-feed.ts): at most one flush a
//     second for all its clients. A member that drops its stream (it died, it restarted) counts as a change of
//     the lists it honoured, and so does its coming back: its items left the merged lists, then returned.
//   - Resource updates carry the URI the client sees, task notifications the id the client knows (a handle, for a
//     member that keeps its own tasks).
// The stream ends when the client leaves; then every member listen is aborted.
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Exchange } from "../server/exchange.js";
import { ClientLeg } from "../calls/client-leg.js";
import type { Breaker } from "../federation/breaker.js";
import type { FederatedCatalog } from "../federation/catalog.js";
import {
  LIST_CHANGED_METHOD,
  LIST_KINDS,
  listKindOf,
  type ChangeFeed,
  type ListKind,
} from "../federation/change-feed.js";
import type { Logger } from "../log/logger.js";
import { invalidParams } from "../protocol/errors.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { META, type ModernRequest } from "../protocol/modern-request.js";
import { sseEvents } from "../upstream/sse-reader.js";
import { faultResponse } from "../web/json-response.js";

interface ListenMember {
  name: string;
  path: string;
}

export interface FederatedListenDeps {
  members(): readonly ListenMember[];
  /** The member's listen: the client's request to its route, with this body, ended by `signal`. */
  open(ex: Exchange, member: ListenMember, body: JsonObject, signal: AbortSignal): Promise<Response>;
  /** The member and its own id for a task id the client names; undefined when it is not the client's here. */
  taskTarget(ex: Exchange, id: string): { upstream: string; id: string } | undefined;
  catalog: FederatedCatalog;
  feed: ChangeFeed;
  breaker(member: string): Breaker;
  /** How long the client's acknowledgement waits for the members. */
  ackTimeoutMs: number;
  keepAliveMs: number;
  log: Logger;
}

/** One member's part of a listen: what to ask it for, and how its URIs read for the client. */
interface MemberPart {
  member: ListenMember;
  kinds: ListKind[];
  /** The member's own URI → the URI the client subscribed to. */
  uris: Map<string, string>;
  /** The member's own task id → the id the client named. */
  taskIds: Map<string, string>;
}

const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
/** Notifications a member sends before the client is acknowledged wait for it, up to this many. */
const MAX_EARLY = 256;

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? [...new Set(value.filter((v): v is string => typeof v === "string"))] : [];
}

function filterOf(part: MemberPart): JsonObject {
  const filter: JsonObject = {};
  for (const k of part.kinds) filter[k] = true;
  if (part.uris.size > 0) filter.resourceSubscriptions = [...part.uris.keys()];
  if (part.taskIds.size > 0) filter.taskIds = [...part.taskIds.keys()];
  return filter;
}

/** Splits the client's filter by member; undefined when it names nothing a member could honour. */
function plan(ex: Exchange, requested: JsonObject, deps: FederatedListenDeps): MemberPart[] | undefined {
  const kinds = LIST_KINDS.filter((k) => requested[k] === true);
  const parts = new Map<string, MemberPart>(
    deps.members().map((m) => [m.name, { member: m, kinds, uris: new Map(), taskIds: new Map() }]),
  );
  const { catalog } = deps;
  for (const uri of stringsOf(requested.resourceSubscriptions)) {
    const found = catalog.resolveUri(uri);
    if (found) parts.get(found.upstream)?.uris.set(found.uri, uri);
  }
  for (const id of stringsOf(requested.taskIds)) {
    const target = deps.taskTarget(ex, id);
    if (target) parts.get(target.upstream)?.taskIds.set(target.id, id);
  }
  const needed = [...parts.values()].filter((p) => p.kinds.length > 0 || p.uris.size > 0 || p.taskIds.size > 0);
  return needed.length > 0 ? needed : undefined;
}

/** What one member acknowledged, in the client's terms. */
interface Honoured {
  kinds: ListKind[];
  uris: string[];
  taskIds: string[];
}

function honouredBy(part: MemberPart, ack: JsonObject): Honoured {
  return {
    kinds: part.kinds.filter((k) => ack[k] === true),
    uris: stringsOf(ack.resourceSubscriptions).flatMap((u) => {
      const shown = part.uris.get(u);
      return shown === undefined ? [] : [shown];
    }),
    taskIds: stringsOf(ack.taskIds).flatMap((id) => {
      const shown = part.taskIds.get(id);
      return shown === undefined ? [] : [shown];
    }),
  };
}

/**
 * A member's listen for as long as the client listens: reopened after a drop (with a growing pause, not while
 * the member's breaker is open). `ready` settles at the first acknowledgement, or when the member cannot listen.
 */
class MemberListen {
  readonly ready: Promise<Honoured | undefined>;
  private markReady!: (h: Honoured | undefined) => void;
  private honoured: Honoured | undefined;
  /** True once the member acknowledged, or turned out unable to listen. */
  settled = false;

  /** What the member honoured at its last acknowledgement. */
  get acknowledged(): Honoured | undefined {
    return this.honoured;
  }

  constructor(
    private readonly ex: Exchange,
    private readonly part: MemberPart,
    private readonly body: JsonObject,
    private readonly deps: FederatedListenDeps,
    private readonly signal: AbortSignal,
    private readonly event: (member: MemberPart, message: JsonObject) => void,
  ) {
    this.ready = new Promise((r) => (this.markReady = r));
    void this.ready.then(() => (this.settled = true));
    void this.run();
  }

  private async run(): Promise<void> {
    let pause = RETRY_MS;
    let lost = false;
    const breaker = this.deps.breaker(this.part.member.name);
    while (!this.signal.aborted) {
      if (breaker.allows()) {
        const outcome = await this.once(lost).catch((err: unknown) => {
          if (!this.signal.aborted)
            this.deps.log.debug("federated listen: a member's stream failed", {
              upstream: this.part.member.name,
              cause: (err as Error).message,
            });
          return "dropped" as const;
        });
        if (outcome === "done" || this.signal.aborted) break;
        if (outcome === "acked") pause = RETRY_MS;
        // Whatever it listed may have left the merged lists (or will come back changed): say so.
        if (this.honoured) for (const k of this.honoured.kinds) this.deps.feed.changed(k);
        lost = true;
      }
      const wait = Math.max(pause, breaker.retryAfterMs());
      pause = Math.min(pause * 2, MAX_RETRY_MS);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    this.markReady(undefined);
  }

  /** One listen on the member: "done" when it honours nothing (no point asking again), "acked" when it ran. */
  private async once(reopened: boolean): Promise<"done" | "acked" | "dropped"> {
    const res = await this.deps.open(this.ex, this.part.member, this.body, this.signal);
    const sse = (res.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
    if (!sse || !res.body) {
      await res.body?.cancel();
      // A refusal (an error answer) is final unless the member or its route failed.
      if (res.status >= 500) return "dropped";
      this.markReady(undefined);
      return "done";
    }
    let acked = false;
    await sseEvents(Readable.fromWeb(res.body as NodeReadableStream<Uint8Array>), (e) => {
      let message: unknown;
      try {
        message = JSON.parse(e.data);
      } catch {
        return;
      }
      if (!isRecord(message) || !isRecord(message.params)) return;
      if (message.method === "notifications/subscriptions/acknowledged") {
        acked = true;
        const ack = isRecord(message.params.notifications) ? message.params.notifications : {};
        this.honoured = honouredBy(this.part, ack);
        this.markReady(this.honoured);
        if (reopened) for (const k of this.honoured.kinds) this.deps.feed.changed(k);
        return;
      }
      if (acked) this.event(this.part, message);
    });
    const honoursNothing =
      this.honoured !== undefined &&
      this.honoured.kinds.length + this.honoured.uris.length + this.honoured.taskIds.length === 0;
    return honoursNothing ? "done" : acked ? "acked" : "dropped";
  }
}

export async function federatedListen(ex: Exchange, req: ModernRequest, deps: FederatedListenDeps): Promise<Response> {
  const requested = req.params.notifications;
  if (!isRecord(requested))
    return faultResponse(req.id, invalidParams("subscriptions/listen requires params.notifications"));
  const parts = plan(ex, requested, deps);
  const subscriptionId = req.id;
  const leg = new ClientLeg(req.id, undefined, ex.webRequest().signal, deps.keepAliveMs);
  const stamp = (method: string, params: JsonObject): JsonObject => {
    const meta = isRecord(params._meta) ? params._meta : {};
    return { jsonrpc: "2.0", method, params: { ...params, _meta: { ...meta, [META.subscriptionId]: subscriptionId } } };
  };
  const end = (): void => leg.result({ resultType: "complete", _meta: { [META.subscriptionId]: subscriptionId } });
  const ack = (acknowledged: JsonObject): void =>
    leg.notify(stamp("notifications/subscriptions/acknowledged", { notifications: acknowledged }));
  if (!parts) {
    ack({});
    end();
    return leg.response;
  }

  const stop = new AbortController();
  const signal = AbortSignal.any([ex.webRequest().signal, stop.signal]);
  let acked = false;
  const early: JsonObject[] = [];
  const deliver = (message: JsonObject): void => {
    if (acked) leg.notify(message);
    else if (early.length < MAX_EARLY) early.push(message);
  };
  const event = (part: MemberPart, message: JsonObject): void => {
    const method = message.method;
    const params = message.params as JsonObject;
    if (listKindOf(method) !== undefined) return deps.feed.changed(listKindOf(method) as ListKind);
    if (method === "notifications/resources/updated" && typeof params.uri === "string") {
      const shown = part.uris.get(params.uri);
      if (shown !== undefined) deliver(stamp(method, { ...params, uri: shown }));
      return;
    }
    const shown =
      method === "notifications/tasks" && typeof params.taskId === "string" && part.taskIds.get(params.taskId);
    if (shown) deliver(stamp(method, { ...params, taskId: shown }));
  };
  const listens = parts.map((part) => {
    const body = {
      jsonrpc: "2.0",
      id: req.id,
      method: "subscriptions/listen",
      params: { ...req.params, notifications: filterOf(part) },
    };
    return new MemberListen(ex, part, body, deps, signal, event);
  });

  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, deps.ackTimeoutMs);
  });
  await Promise.race([Promise.all(listens.map((l) => l.ready)), late]);
  clearTimeout(timer);
  // A member still unheard of is acknowledged for the lists (every member is asked for them), and for its
  // resources and tasks once it answers.
  const honoured = listens.flatMap((l) => (l.acknowledged ? [l.acknowledged] : []));
  const kinds = new Set<ListKind>(honoured.flatMap((h) => h.kinds));
  if (!listens.every((l) => l.settled)) for (const k of LIST_KINDS) if (requested[k] === true) kinds.add(k);
  const acknowledged: JsonObject = {};
  for (const k of kinds) acknowledged[k] = true;
  const uris = honoured.flatMap((h) => h.uris);
  const taskIds = honoured.flatMap((h) => h.taskIds);
  if (uris.length > 0) acknowledged.resourceSubscriptions = uris;
  if (taskIds.length > 0 || requested.taskIds !== undefined) acknowledged.taskIds = taskIds;
  if (leg.closed || (kinds.size === 0 && uris.length === 0 && taskIds.length === 0)) {
    stop.abort();
    ack(acknowledged);
    end();
    return leg.response;
  }
  const unsubscribe = deps.feed.subscribe((changed) => {
    for (const k of changed) if (kinds.has(k)) leg.notify(stamp(LIST_CHANGED_METHOD[k], {}));
  });
  ack(acknowledged);
  acked = true;
  for (const m of early.splice(0)) leg.notify(m);
  leg.onClose(() => {
    unsubscribe();
    stop.abort();
  });
  return leg.response;
}
