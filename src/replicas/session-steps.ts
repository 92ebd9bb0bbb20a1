// The pipeline's session steps (server/pipeline.ts), for every endpoint that serves sessions: session ownership
// right after the body is read, and forwarding to the owner once the policy was decided here (session-routing.ts).
import type { Callers } from "../policy/sets/identity.js";
import { sessionNotFound, storeUnavailable, type Fault } from "../protocol/errors.js";
import type { Exchange } from "../server/exchange.js";
import { callerOf } from "../server/identify.js";
import { RESPONSE_ALREADY_SENT } from "../server/node-server.js";
import { step, type Step } from "../server/pipeline.js";
import { faultResponse } from "../web/json-response.js";
import type { Logger } from "../log/logger.js";
import type { SessionRouting } from "./session-routing.js";

/**
 * Session ownership. Whenever the caller is verified (auth.jwt, whatever reaches the upstream), a session id it
 * presents must be bound to it, and a session id issued in answer to its initialize is bound to it before the
 * client learns it (Exchange.onSessionIssued, run by the pass-through or by bindIssued).
 */
export function sessionStep(sessions: SessionRouting | undefined, callers: Callers, log: Logger): Step {
  return step("session", (ex) => {
    if (!sessions) return undefined;
    const verified = ex.verified !== undefined && ex.method !== "OPTIONS";
    const caller = verified ? () => callerOf(callers, ex) : undefined;
    if (caller && ex.post?.parsed?.method === "initialize" && ex.header("mcp-session-id") === undefined)
      ex.onSessionIssued = async (sessionId): Promise<Fault | undefined> => {
        try {
          if (await sessions.bind(sessionId, caller())) return undefined;
        } catch (err) {
          log.warn("could not bind a new session to its caller", { cause: (err as Error).message });
          return storeUnavailable();
        }
        // Only an id issued twice (an upstream that reuses ids) can be another caller's already.
        log.warn("a session id issued to one caller is bound to another; refused");
        return sessionNotFound();
      };
    return sessions.route(ex, caller);
  });
}

/** To the process holding the request's session, with what was decided here (after the rate limits and access). */
export function forwardStep(sessions: SessionRouting | undefined): Step {
  return step("forward", (ex) => (sessions && ex.sessionOwner !== undefined ? sessions.forward(ex) : undefined));
}

/**
 * An answer the gateway made itself (a legacy session it serves, say) that issues a session id: the id is bound
 * to the request's verified caller before the answer goes out. The pass-through binds its own (http/proxy.ts).
 */
async function bindIssued(ex: Exchange, res: Response): Promise<Response> {
  if (res === RESPONSE_ALREADY_SENT || res.status >= 300) return res;
  const sessionId = res.headers.get("mcp-session-id");
  const refused = sessionId === null ? undefined : await ex.sessionIssued(sessionId);
  if (!refused) return res;
  await res.body?.cancel();
  return faultResponse(ex.post?.parsed?.id ?? null, refused);
}

/** The endpoint's handler, with bindIssued after it when this request may issue a session (an initialize). */
export function bindingIssued(
  handle: (ex: Exchange) => Promise<Response> | Response,
): (ex: Exchange) => Promise<Response> | Response {
  return (ex) => {
    const res = handle(ex);
    if (!ex.onSessionIssued) return res;
    return Promise.resolve(res).then((answer) => (ex.onSessionIssued ? bindIssued(ex, answer) : answer));
  };
}
