// A federated endpoint's request to one of its members goes through the app (app.fetch) with this env, so the
// layers that observe requests (metrics, the access log, server spans) see the client's request once, on the
// federated endpoint, and not again for each member it fans out to.
const MEMBER = Symbol("federated member request");

/** The env a federated endpoint passes to app.fetch for a member request. */
export const MEMBER_REQUEST_ENV: Readonly<Record<symbol, true>> = Object.freeze({ [MEMBER]: true });

export function isMemberRequest(env: unknown): boolean {
  return typeof env === "object" && env !== null && (env as Record<symbol, unknown>)[MEMBER] === true;
}
