// The lean path for tasks/get polls, in front of Hono on the Node listener.
//
// A client polls a task every few hundred milliseconds, so tasks/get is the
// gateway's most frequent request once tasks run, and its answer is stored
// bytes. Through Hono it cost ≈ 2.5× a bare node:http server answering the same
// bytes (bench/RESULTS.md, "tasks/get: the lean path"): the web Request/Response
// pair, the context and its closures, and the route's general steps. Here the
// Node request is answered directly, with every check the spec and the policy
// require and the same bytes and headers the full route sends:
//   Origin and Host, the auth gate and the identity header rule (from the
//   headers, before any body is read, as the full route), the body limit,
//   JSON-RPC and 2026-07-28 validation (headers included, classifyPost), the
//   caller's binding (Callers.digest) and the tasks capability (serveTaskMethod).
// Rate limits on tasks/get are checked here too, before the task is read: a limited poll is handed to the full
// route with its verdict (rate-limit.ts handOverVerdict), which answers 429 without checking it again.
// Anything else is handed to the full route with the body already read
// (read-post.ts handOverBody): a refusal (its error answer, log and audit line
// are the full route's to make), an id this replica does not know (it may be the
// upstream's), a store that fails. So this path only ever answers a found task.
// It is off when tracing or the access log is on: both observe every request.
import type { IncomingMessage, ServerResponse } from "node:http";
import { classifyPost, type ModernRequest } from "../protocol/modern-request.js";
import { parseJsonRpcBody } from "../protocol/jsonrpc.js";
import { isOriginAllowed } from "../protocol/origin.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import type { GatewayConfig } from "../config/schema.js";
import type { TaskEngine } from "../tasks/engine.js";
import { serveTaskMethod } from "../tasks/methods.js";
import { methodClass } from "../metrics/labels.js";
import type { Callers } from "./identity.js";
import { credentialHeaders } from "./identity.js";
import type { LivePolicy, PolicySet } from "./policy-set.js";
import { verifiedFrom, verifyEarly, type VerifiedCaller } from "./request-auth.js";
import { handOverBody, isJsonContentType, readNodePost } from "./read-post.js";
import type { BodyResult } from "./limited-body.js";
import type { Claims } from "../policy/claims.js";
import type { RateLimiter, RateVerdict } from "../ratelimit/limiter.js";
import { handOverVerdict } from "./rate-limit.js";

/** The upstream served at a path: the one whose tasks a poll there may read, under its policy. */
interface PollRoute {
  upstream: string;
  live: LivePolicy;
}

export interface TaskPollDeps {
  server: GatewayConfig["server"];
  /** The upstream at a request's path (the exact path, never a query), or undefined: the full route's then. */
  routeAt(path: string): PollRoute | undefined;
  callers: Callers;
  engine: TaskEngine;
  /** Rate limits (limits.rules): a poll a rule covers is checked here, before its task is read. */
  limiter: RateLimiter;
  /** Counts the answered request as the full route would (metrics on). */
  count?: ((era: "modern", method: string, status: number) => void) | undefined;
}

/** Node's listener for everything else (Hono's, through @hono/node-server). */
export type NodeListener = (incoming: IncomingMessage, outgoing: ServerResponse) => void;

const TASKS_GET = "tasks/get";

/**
 * A poll is a few hundred bytes: a body without a declared length, or a large one, is the full route's,
 * so this path never buffers what the full route would have refused first (a bad token, say).
 */
const MAX_POLL_BYTES = 16 * 1024;

function isPollSized(declared: string | undefined): boolean {
  if (declared === undefined) return false;
  const n = Number(declared);
  return Number.isInteger(n) && n >= 0 && n <= MAX_POLL_BYTES;
}

/** A Host the full route would accept without a doubt (name or IPv4 or [IPv6], optional port); anything else is its to judge. */
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const POLL_CLASS = methodClass({ method: TASKS_GET });

/** A header as one string (Node joins repeated ones into an array for a few names only). */
function header(incoming: IncomingMessage, name: string): string | undefined {
  const v = incoming.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

/**
 * A Node listener that serves tasks/get polls itself and hands every other
 * request to `next`. Eligibility is read from the request line and headers
 * alone (POST to the MCP path, Mcp-Method: tasks/get), so nothing else pays more
 * than a string compare.
 */
export function taskPollListener(deps: TaskPollDeps, next: NodeListener): NodeListener {
  const { server, callers, engine } = deps;

  /**
   * Who is calling, from the headers alone, before any body is read (as the full route checks the token
   * first): undefined when the request is the full route's (a refused token, a missing identity header).
   */
  const whoIs = async (
    incoming: IncomingMessage,
    set: PolicySet,
  ): Promise<{ caller: string; claims: Claims | undefined } | undefined> => {
    if (set.identityHeader && !header(incoming, set.identityHeader)) return undefined;
    let verified: VerifiedCaller | undefined;
    if (set.auth) {
      // The outcome stays with the request: handed on, it is not verified a second time.
      const outcome = await verifyEarly(incoming, set.auth);
      if (!outcome.ok) return undefined;
      verified = verifiedFrom(outcome.principal);
    }
    const caller = callers.digest(
      verified,
      set,
      (name) => header(incoming, name),
      () => credentialHeaders(incoming.rawHeaders),
    );
    return { caller, claims: verified?.claims };
  };

  /** The rate limits' verdict on a poll, or undefined when no rule covers it. */
  const limit = (
    set: PolicySet,
    who: { caller: string; claims: Claims | undefined },
    upstream: string,
  ): RateVerdict | Promise<RateVerdict> | undefined =>
    set.limits.empty
      ? undefined
      : deps.limiter.check(set.limits, {
          method: TASKS_GET,
          tool: undefined,
          upstream,
          claims: who.claims,
          caller: () => who.caller,
        });

  /** The stored answer's body for this request, or undefined to hand the request on. */
  const answer = async (
    incoming: IncomingMessage,
    read: BodyResult,
    set: PolicySet,
    who: { caller: string; claims: Claims | undefined },
    upstream: string,
  ): Promise<string | undefined> => {
    if (!read.ok || !isJsonContentType(header(incoming, "content-type"))) return undefined;
    const parsed = parseJsonRpcBody(read.body);
    if (!parsed.ok) return undefined;
    const cls = classifyPost(parsed.message, (name) => header(incoming, name), TASK_METHODS);
    if (cls.era !== "modern" || "reject" in cls || cls.message.kind !== "request" || cls.message.method !== TASKS_GET)
      return undefined;
    const req: ModernRequest = cls.message;
    // Checked before the task is read; whatever happens next, the full route gets the verdict, never a second check.
    const checked = limit(set, who, upstream);
    if (checked !== undefined) {
      const verdict = checked instanceof Promise ? await checked : checked;
      handOverVerdict(incoming, verdict);
      if (verdict.kind !== "allowed") return undefined;
    }
    const served = await serveTaskMethod(engine, req, who.caller, "defer", upstream);
    if (!served || !("resultJson" in served)) return undefined;
    return `{"jsonrpc":"2.0","id":${JSON.stringify(req.id)},"result":${served.resultJson}}`;
  };

  const serve = async (incoming: IncomingMessage, outgoing: ServerResponse, route: PollRoute): Promise<void> => {
    const set = route.live.current;
    let who: { caller: string; claims: Claims | undefined } | undefined;
    try {
      who = await whoIs(incoming, set);
    } catch {
      who = undefined;
    }
    // Refused before the body is read: the full route answers (401 at once, without waiting for a body).
    if (who === undefined) {
      next(incoming, outgoing);
      return;
    }
    const read = await readNodePost(incoming, server.maxBodyBytes);
    let body: string | undefined;
    try {
      body = await answer(incoming, read, set, who, route.upstream);
    } catch {
      // A store that failed: the full route answers it (503) and logs why.
      body = undefined;
    }
    if (body === undefined) {
      handOverBody(incoming, read);
      next(incoming, outgoing);
      return;
    }
    // The same status and headers as the full route's resultTextResponse, written by @hono/node-server.
    outgoing.writeHead(200, { "content-type": "application/json", "Content-Length": Buffer.byteLength(body) });
    outgoing.end(body);
    deps.count?.("modern", POLL_CLASS, 200);
  };

  return (incoming, outgoing) => {
    const route =
      incoming.method === "POST" && incoming.headers["mcp-method"] === TASKS_GET
        ? deps.routeAt(incoming.url ?? "")
        : undefined;
    if (
      !route ||
      !isPollSized(incoming.headers["content-length"]) ||
      !PLAIN_HOST.test(incoming.headers.host ?? "") ||
      !isOriginAllowed(header(incoming, "origin"), server)
    ) {
      next(incoming, outgoing);
      return;
    }
    // serve() hands every failure it can foresee to the full route; anything else ends the exchange, never the process.
    serve(incoming, outgoing, route).catch(() => outgoing.destroy());
  };
}
