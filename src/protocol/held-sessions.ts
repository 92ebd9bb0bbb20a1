// The one hook every kind of gateway-held session calls (issue 23): a stdio session, a 2025-11-25 task session,
// a legacy session in front of a modern-only upstream, a federated legacy session. Each layer that holds
// sessions takes it as an option, so none of them depends on the store that implements it (store/session-owners.ts).

export interface HeldSessions {
  /**
   * This process now holds the session: other replicas must find it here. Resolves once they can, so it is
   * awaited before the client learns the session id. Never rejects (a store that is away is retried by renewal).
   */
  claim(sessionId: string): Promise<void>;
  /** The session ended here (DELETE, idle, crash, capacity, shutdown). */
  release(sessionId: string): void;
}
