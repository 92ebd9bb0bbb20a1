// What the gateway knows about the HTTP request behind a modern call, besides
// the JSON-RPC message: who is calling, which of its headers travel upstream,
// and when it went away.
export interface CallerContext {
  /** The caller's identity digest (binds MRTR state and tasks). */
  caller: string;
  /** Who the caller is, as audit lines say it: the verified identity claim or the identity header's value. */
  subject?: string | undefined;
  /** Set when callers must not share pooled upstream sessions even with equal credentials (see SessionSpec.partition). */
  partition?: string | undefined;
  /** End-to-end credential headers to forward to the upstream (flat name/value list). */
  credentialHeaders: string[];
  /**
   * The client's traceparent/tracestate (flat list; empty without), sent with its call on a pooled
   * session so the upstream joins the client's trace. Never part of the session key.
   */
  traceHeaders?: string[] | undefined;
  /** Fires when the client goes away (or graceful shutdown cuts the call). */
  signal: AbortSignal;
}
