// The client's own upstream session, as the sessions a LegacyCall runs on. A
// 2025-11-25 client's task-augmented tools/call is sent upstream by the gateway
// on that client's session (the session is the upstream's and the client's, so
// the call sees the client's capabilities and state), under an id the gateway
// chose: a per-call random prefix, so it never meets one of the client's ids.
// Nothing is pooled or closed here: the session belongs to the client.
import { randomBytes } from "node:crypto";
import type { JsonObject } from "../protocol/json.js";
import { LegacySession, UpstreamSessionError, type SessionLease } from "../bridge-to-legacy/legacy-sessions.js";
import type { CallSessions } from "../bridge-to-legacy/legacy-call.js";
import type { UpstreamClient } from "../upstream/client.js";
import { postRpc } from "../upstream/rpc.js";

class ClientUpstreamSession extends LegacySession {
  private readonly prefix = `gw-task-${randomBytes(6).toString("base64url")}`;
  private n = 0;

  override nextId(): string {
    this.n += 1;
    return `${this.prefix}-${this.n}`;
  }
}

export interface ClientSessionSpec {
  /** The client's Mcp-Session-Id; undefined for a stateless upstream. */
  sessionId: string | undefined;
  /** The MCP-Protocol-Version the client sends. */
  protocolVersion: string;
  /** The headers the upstream is to see that carry credentials (flat name/value list). */
  credentialHeaders: string[];
}

export class ClientSessions implements CallSessions {
  private readonly session: ClientUpstreamSession;

  constructor(
    private readonly upstream: UpstreamClient,
    spec: ClientSessionSpec,
    private readonly controlTimeoutMs: number,
    now: number,
  ) {
    const init = {
      protocolVersion: spec.protocolVersion,
      capabilities: {} as JsonObject,
      serverInfo: {} as JsonObject,
    };
    this.session = new ClientUpstreamSession("client", spec.credentialHeaders, spec.sessionId, init, now);
  }

  lease(): Promise<SessionLease> {
    // The gateway cannot open the client's session again: a session the upstream forgot fails the call.
    if (this.session.lost)
      return Promise.reject(new UpstreamSessionError("the client's upstream session is gone", 404, undefined));
    return Promise.resolve({ session: this.session, release: () => undefined });
  }

  async post(session: LegacySession, message: unknown): Promise<void> {
    const answer = await postRpc(this.upstream, session.headers(), message, AbortSignal.timeout(this.controlTimeoutMs));
    answer.discard();
    if (answer.status >= 400)
      throw new UpstreamSessionError(`upstream refused the message (HTTP ${answer.status})`, answer.status, undefined);
  }

  send(session: LegacySession, message: unknown): Promise<void> {
    return this.post(session, message).catch(() => undefined);
  }

  invalidate(session: LegacySession): void {
    session.lost = true;
  }

  forget(): void {
    // Not pooled: nothing to forget.
  }
}
