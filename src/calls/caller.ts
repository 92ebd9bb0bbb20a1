// Who is calling, besides the JSON-RPC message: one type for every route (the
// modern surface and the era bridge, the 2025-11-25 tasks hook, the legacy
// sessions the gateway serves itself), built in one place from the request and
// the policy in force (policy/sets/identity.ts Callers.identify). It lives here, the
// lowest layer every consumer may import; a consumer that needs less takes it
// whole or a Pick of it, never a type of its own.
import type { Claims } from "../policy/claims.js";

export interface Caller {
  /** The caller's identity digest: tasks, MRTR state and sessions are bound to it. */
  caller: string;
  /** Who the caller is, as audit lines say it: the verified identity claim or the identity header's value; never a token. */
  subject: string | undefined;
  /** The verified token's claims (auth.jwt), for claim-matched task and access rules; undefined without a verified token. */
  claims: Claims | undefined;
  /** Set when callers must not share pooled upstream sessions even with equal credentials (see SessionSpec.partition). */
  partition: string | undefined;
  /** End-to-end credential headers to forward to the upstream (flat name/value list); pooled sessions are keyed by them. */
  credentialHeaders: string[];
  /** The request's headers as the upstream is to see them (flat rawHeaders list; the auth gate may have changed them). */
  upstreamHeaders: string[];
  /**
   * The client's traceparent/tracestate (flat list; empty without), sent with its calls on a pooled or
   * gateway-held session so the upstream joins the client's trace. Never part of a session key.
   */
  traceHeaders: string[];
  /** Fires when the client goes away (or graceful shutdown cuts the request). */
  signal: AbortSignal;
}
