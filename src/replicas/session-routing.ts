// Every gateway-held session on every replica (issue 23). A request naming an Mcp-Session-Id this process does
// not hold is forwarded to the process that does (store/session-owners.ts says which), on its internal listener
// with the replica credential, and the answer streams back unchanged (http/proxy.ts: no buffering, backpressure,
// a client that leaves aborts the forwarded request, so the owner sees it leave). One step for every kind of
// session (stdio, 2025-11-25 tasks, legacy-front, federated legacy), run early by each MCP handler.
//
// The owner checks everything again (the forwarder sends the client's own headers): the token, and the caller a
// session is bound to, so knowing a session id is no more use on another replica than on its owner.
//
// Hot path: a request without a session id, or on a session held here, costs a Map lookup. A session id the store
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
   * Undefined, or a promise of undefined: served here (no session id, held here, or no gateway-held session);
   * else the forwarded answer (or the 404 of a session whose owner is gone).
   * `caller` (auth.jwt with upstream credentials dropped): the session id is bound to the verified caller of its
   * first request, and any other caller gets 404 as for an unknown session, here and on every replica.
   */
  route(ex: Exchange, caller?: () => string): Promise<Response | undefined> | undefined;
}

export function sessionRouting(deps: SessionRoutingDeps): SessionRouting {
  const { owners, log } = deps;
  /** Session ids the store does not name: pass-through sessions. */
  const notHeld = new LRUCache<string, true>({ max: REMEMBERED });
  /** Session id → owner replica (an owner never changes; a dead one fails the forward, which forgets it). */
  const ownerOf = new LRUCache<string, string>({ max: REMEMBERED });
  /** Replica → internal listener address; re-read after a third of a lease, so a dead owner's lapses. */
  const addresses = new LRUCache<string, string>({ max: 1_000, ttl: deps.addressTtlMs, ttlAutopurge: false });

  const forward = async (ex: Exchange, sessionId: string): Promise<Response | undefined> => {
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
        if (address !== undefined) addresses.set(owner, address);
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
    const res = await deps.forwarder.session(ex, address, deps.headersTimeoutMs);
    if (res.status === 404) ownerOf.delete(sessionId);
    return res;
  };

  /** Session id → the caller it is bound to, as confirmed by the store (a binding never changes). */
  const bound = new LRUCache<string, string>({ max: REMEMBERED });

  /** Undefined when `caller` may use the session; else its 404. */
  const checkCaller = async (sessionId: string, caller: string, ex: Exchange) => {
    let mine: boolean;
    try {
      mine = await owners.bindCaller(sessionId, caller);
    } catch (err) {
      log.warn("could not check a session's caller", { cause: (err as Error).message });
      return faultResponse(ex.post?.parsed?.id ?? null, storeUnavailable());
    }
    if (mine) {
      bound.set(sessionId, caller);
      return undefined;
    }
    log.warn("refused a session id presented by another caller than the one it is bound to");
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
    return forward(ex, sessionId);
  };

  return {
    owners,
    route,
  };
}
