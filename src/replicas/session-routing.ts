// Every gateway-held session on every replica (issue 23), and every session bound to its verified caller.
//
// Two steps of the pipeline (server/pipeline.ts):
//   - `route` (session ownership), right after the body is read: a session id presented by a verified caller must
//     be bound to that caller (else 404, as for an unknown session), and a session another process holds gets
//     its owner noted on the Exchange. Nothing is forwarded yet.
//   - `forward`, once rate limits and access rules were decided here, where the request landed: the request goes
//     to the owner's internal listener with a credential bound to it that carries that verdict (forward-token.ts),
//     and the answer streams back unchanged (http/proxy.ts: no buffering, backpressure, a client that leaves
//     aborts the forwarded request, so the owner sees it leave).
//
// Bindings: a session id is bound to its verified caller when the gateway issued it or the upstream returned it
// to an initialize (`bind`, called before the client learns the id), never because a client presented it, so
// a made-up id costs no key; each caller has at most server.maxSessionsPerCaller bindings.
//
// Hot path: a request without a session id, or on a session held here, costs a Map lookup; one on a session another
// process holds, once its owner and address are known, two cache lookups and no promise. A session id the store
// does not name is remembered as not gateway-held (a pass-through session: its id is never claimed later, since a
// claim is written before the client learns the id), so it costs one Redis GET per replica, once.
import { LRUCache } from "lru-cache";
import type { Logger } from "../log/logger.js";
import { sessionNotFound, storeUnavailable } from "../protocol/errors.js";
import type { SessionOwners } from "../store/session-owners.js";
import type { TaskLeases } from "../store/task-leases.js";
import { faultResponse } from "../web/json-response.js";
import type { ReplicaForwarder } from "./forward.js";
import type { Exchange } from "../server/exchange.js";

/** Session ids remembered per kind (owner found, none); each entry is a few hundred bytes at most. */
const REMEMBERED = 10_000;
/**
 * Longest session id looked up: SDK ids are UUIDs, the gateway's 22 characters; anything longer is no session of
 * ours (and, where sessions are bound to callers, none at all).
 */
const MAX_SESSION_ID = 256;

export interface SessionRoutingDeps {
  owners: SessionOwners;
  leases: TaskLeases;
  forwarder: ReplicaForwarder;
  /** How long an owner's address is trusted before the registry is asked again: a third of a lease. */
  addressTtlMs: number;
  /** Bound on the wait for a forwarded request's answer to start (the owner bounds its own upstream wait). */
  headersTimeoutMs: number;
  log: Logger;
}

export interface SessionRouting {
  readonly owners: SessionOwners;
  /**
   * Undefined (or a promise of it) when the request may go on, with `ex.sessionOwner` set when another process
   * holds its session; else the answer (404 for a session that is not the caller's or whose owner is gone).
   * `caller`: the verified caller, when there is one: the session must be bound to it.
   */
  route(ex: Exchange, caller?: () => string): Promise<Response | undefined> | undefined;
  /** The request to its session's owner (ex.sessionOwner), with its verdicts; the owner's answer streams back. */
  forward(ex: Exchange): Promise<Response>;
  /** Binds a session id the gateway issued or the upstream returned to its verified caller (before the client learns it). */
  bind(sessionId: string, caller: string): Promise<boolean>;
}

export function sessionRouting(deps: SessionRoutingDeps): SessionRouting {
  const { owners, log } = deps;
  /** Session ids the store does not name: pass-through sessions. */
  const notHeld = new LRUCache<string, true>({ max: REMEMBERED });
  /** Session id → owner replica (an owner never changes; a dead one fails the forward, which forgets it). */
  const ownerOf = new LRUCache<string, string>({ max: REMEMBERED });
  /** Replica → internal listener address; re-read after a third of a lease, so a dead owner's lapses. */
  const addresses = new LRUCache<string, string>({ max: 1_000, ttl: deps.addressTtlMs, ttlAutopurge: false });

  /** Who holds the session: undefined (here, or a pass-through session), its owner's address on the Exchange, or a 404. */
  const locate = async (ex: Exchange, sessionId: string): Promise<Response | undefined> => {
    const id = ex.post?.parsed?.id ?? null;
    let owner = ownerOf.get(sessionId);
    let address: string | undefined;
    try {
      if (owner === undefined) {
        owner = await owners.ownerOf(sessionId);
        if (owner === undefined) {
          notHeld.set(sessionId, true);
          return undefined;
        }
        ownerOf.set(sessionId, owner);
      }
      // Named as ours, but not held: it ended here and its record has not gone yet.
      if (owner === owners.replicaId) return faultResponse(id, sessionNotFound());
      address = addresses.get(owner);
      if (address === undefined) {
        address = await deps.leases.addressOf(owner);
        // A worker of this host is reached through its Unix socket (the answer is cached with the address).
        if (address !== undefined) {
          address = deps.forwarder.addressFor(owner, address);
          addresses.set(owner, address);
        }
      }
    } catch (err) {
      // The store is away: served here, as the pass-through session it most likely is (pass-through keeps
      // working through a store outage); a session another process holds then answers 404 here.
      log.warn("could not look up a session's owner; serving it here", { cause: (err as Error).message });
      return undefined;
    }
    // Its owner is gone (killed, or its registration lapsed): the session is over, and the client starts a new one.
    if (address === undefined) {
      ownerOf.delete(sessionId);
      return faultResponse(id, sessionNotFound());
    }
    ex.sessionOwner = address;
    return undefined;
  };

  const forward = async (ex: Exchange): Promise<Response> => {
    const res = await deps.forwarder.session(ex, ex.sessionOwner as string, deps.headersTimeoutMs);
    const sessionId = ex.header("mcp-session-id");
    if (res.status === 404 && sessionId !== undefined) ownerOf.delete(sessionId);
    return res;
  };

  /** Session id → the caller it is bound to, as confirmed by the store (a binding never changes hands). */
  const bound = new LRUCache<string, string>({ max: REMEMBERED });

  /** Undefined when `caller` may use the session; else its 404 (unbound, or another caller's), or 503. */
  const checkCaller = async (sessionId: string, caller: string, ex: Exchange) => {
    let holder: string | undefined;
    try {
      holder = await owners.boundCaller(sessionId);
    } catch (err) {
      log.warn("could not check a session's caller", { cause: (err as Error).message });
      return faultResponse(ex.post?.parsed?.id ?? null, storeUnavailable());
    }
    if (holder === caller) {
      bound.set(sessionId, caller);
      return undefined;
    }
    if (holder !== undefined) log.warn("refused a session id presented by another caller than the one it is bound to");
    return faultResponse(ex.post?.parsed?.id ?? null, sessionNotFound());
  };

  const route: SessionRouting["route"] = (ex, caller) => {
    const sessionId = ex.header("mcp-session-id");
    if (sessionId === undefined) return undefined;
    if (sessionId.length > MAX_SESSION_ID)
      return caller ? Promise.resolve(faultResponse(ex.post?.parsed?.id ?? null, sessionNotFound())) : undefined;
    if (caller) {
      const who = caller();
      const known = bound.get(sessionId);
      if (known !== who)
        return (async () => {
          if (known !== undefined) return faultResponse(ex.post?.parsed?.id ?? null, sessionNotFound());
          return (await checkCaller(sessionId, who, ex)) ?? (await route(ex));
        })();
    }
    if (owners.holds(sessionId)) return undefined;
    // Already forwarded here by the owner map: served here, whatever this process holds (never forwarded twice).
    if (ex.forwarded || notHeld.has(sessionId)) return undefined;
    // Owner and address both known (every request on a forwarded session after its first): noted here and now,
    // with no promise for the pipeline to wait on, so the steps after run in this same turn.
    const owner = ownerOf.get(sessionId);
    const address = owner === undefined || owner === owners.replicaId ? undefined : addresses.get(owner);
    if (address !== undefined) {
      ex.sessionOwner = address;
      return undefined;
    }
    return locate(ex, sessionId);
  };

  const bind = async (sessionId: string, caller: string): Promise<boolean> => {
    const mine = await owners.bindCaller(sessionId, caller);
    if (mine) bound.set(sessionId, caller);
    return mine;
  };

  return {
    owners,
    route,
    forward,
    bind,
  };
}
