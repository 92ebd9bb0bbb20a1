// Legacy (≤ 2025-11-25) clients on a federated endpoint: the gateway holds their session (bridge-to-modern/
// LegacyFront, as in front of a modern-only upstream), and the "upstream" of that front is the federated
// endpoint itself, over loopback HTTP. Every request of the session becomes a stateless 2026-07-28 request to
// <the gateway's own listener><the endpoint's path>, carrying the client's credentials, so the federated
// handler and the member routes behind it serve it exactly as they serve a modern client: merged lists,
// prefixed names, each member's policy, access rules and tasks bound to the same caller; MRTR input rounds
// come back to the client over its session.
//
// Why loopback HTTP and not an in-process UpstreamClient over app.fetch: LegacyFront reads undici's
// ResponseData (a Node Readable body it iterates, dumps and destroys, with undici's header shape), and the
// route's own machinery (auth, Origin, lean paths, in-flight tracking, graceful shutdown of streams) runs on
// the Node listener. Going through the listener keeps one code path, at the price of a local socket per
// request in flight; the front exists only once the gateway listens (startGateway), so a gateway built with
// createGateway alone keeps refusing legacy clients with a 400 that says why.
import { upstreamSchema, type GatewayConfig } from "../config/schema.js";
import { LegacyFront } from "../bridge-to-modern/front.js";
import type { Caller } from "../calls/caller.js";
import type { Logger } from "../log/logger.js";
import { canonicalJson, isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import type { HeldSessions } from "../protocol/held-sessions.js";
import { federatedLegacyClient, sessionNotFound } from "../protocol/errors.js";
import { traceHeaders } from "../telemetry/trace.js";
import { UpstreamClient } from "../upstream/client.js";
import { faultResponse } from "../web/json-response.js";
import { callerIdentity, credentialHeaders } from "../policy/sets/identity.js";
import type { Exchange } from "../server/exchange.js";

export interface FederatedLegacyDeps {
  /** The federated endpoint's name and path. */
  name: string;
  path: string;
  config: GatewayConfig;
  /** The gateway's own listener (http://127.0.0.1:<port>), once it listens; undefined before, or without one. */
  selfOrigin(): string | undefined;
  /** Registers a long-lived stream (a session's GET stream) for graceful shutdown; returns its release. */
  track: (stop: () => void) => () => void;
  now: () => number;
  /** Records each session as this process's (issue 23); absent: every session is here. */
  sessions?: { readonly owners: HeldSessions } | undefined;
  log: Logger;
}

export interface FederatedLegacy {
  /** A legacy POST (a session's message, or an initialize). */
  post(ex: Exchange, message: JsonObject, id: JsonRpcId): Promise<Response>;
  /** A POST on a session the front holds (any message of it); undefined when the request names none of its sessions. */
  onSession(ex: Exchange, message: JsonObject): Promise<Response> | undefined;
  /** GET and DELETE on a session the front holds; undefined for anything else. */
  other(ex: Exchange): Response | undefined;
  /** Its sessions end and its loopback connections close (shutdown, or the endpoint was removed). */
  close(): Promise<void>;
}

export function federatedLegacy(deps: FederatedLegacyDeps): FederatedLegacy {
  // deps.config is read at each use, not kept: a reload changes its live settings (tasks.identityHeader).
  const { log } = deps;
  let made: { front: LegacyFront; loopback: UpstreamClient } | undefined;
  let closed = false;

  /** The front, made at the first legacy initialize once the gateway listens. */
  const front = (): LegacyFront | undefined => {
    if (made) return made.front;
    const origin = deps.selfOrigin();
    if (origin === undefined || closed) return undefined;
    const loopback = new UpstreamClient(upstreamSchema.parse({ url: `${origin}${deps.path}` }), deps.name);
    const { config } = deps;
    const { eraBridge } = config;
    made = {
      loopback,
      front: new LegacyFront({
        upstream: loopback,
        keepAliveMs: config.server.sseKeepAliveMs,
        inputTimeoutMs: eraBridge.inputRequestTtlMs,
        idleMs: eraBridge.sessionIdleMs,
        maxSessions: eraBridge.maxSessions,
        now: deps.now,
        log,
        track: deps.track,
        // The federated endpoint speaks only 2026-07-28: no legacy request ever goes there.
        modernOnly: true,
        held: deps.sessions?.owners,
      }),
    };
    return made.front;
  };

  /**
   * The caller, as the member routes will see it: the credential headers the client sent (Authorization, Cookie,
   * X-Api-Key) and the identity header (tasks.identityHeader) go on every loopback request, so a member route
   * authenticates and identifies the same caller a direct request would. The loopback leads back to the gateway
   * itself, not to an upstream: what an upstream may see is each member route's to decide. The session is bound
   * to the verified caller (a refreshed token is the same one), else to a digest of those headers.
   */
  const callerOf = (ex: Exchange): Caller => {
    const raw = ex.clientHeaders();
    const credentials = credentialHeaders(raw, deps.config.tasks.identityHeader?.toLowerCase());
    return {
      caller: ex.verified ? callerIdentity(ex.verified.identity, "jwt") : callerIdentity(canonicalJson(credentials)),
      subject: undefined,
      claims: undefined,
      partition: undefined,
      credentialHeaders: credentials,
      upstreamHeaders: raw,
      traceHeaders: traceHeaders(raw),
      signal: ex.controller().signal,
    };
  };

  return {
    onSession(ex, message) {
      const sessionId = ex.header("mcp-session-id");
      if (sessionId === undefined || !made?.front.owns(sessionId)) return undefined;
      return made.front.post(sessionId, message, callerOf(ex), undefined);
    },
    async post(ex, message, id) {
      const served = message.method === "initialize" ? front() : made?.front;
      if (!served) return faultResponse(id, federatedLegacyClient(deps.path, false));
      // A session the gateway does not hold (expired, ended, another process's): the client starts a new one.
      if (ex.header("mcp-session-id") !== undefined) return faultResponse(id, sessionNotFound());
      if (message.method !== "initialize") return faultResponse(id, federatedLegacyClient(deps.path, true));
      const params = isRecord(message.params) ? message.params : {};
      return served.initialize(id, params, callerOf(ex));
    },
    other(ex) {
      if (!made || ex.method === "OPTIONS") return undefined;
      const sessionId = ex.header("mcp-session-id");
      if (sessionId === undefined) return undefined;
      if (!made.front.owns(sessionId)) return faultResponse(null, sessionNotFound());
      const who = callerOf(ex);
      if (ex.method === "GET") return made.front.openGet(sessionId, who);
      if (ex.method === "DELETE") return made.front.close(sessionId, who.caller);
      return undefined;
    },
    async close() {
      closed = true;
      if (!made) return;
      made.front.closeAll();
      await made.loopback.close();
    },
  };
}
