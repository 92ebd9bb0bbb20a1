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
// route with its verdict on its Exchange, which answers 429 without checking it again.
// Anything else is handed to the full route with its Exchange (server/exchange.ts carryOn): the body already
// read, the token's outcome, the verdict. A refusal (its error answer, log and audit line are the full route's
// to make), an id this replica does not know (it may be the upstream's), a store that fails. So this path only
// ever answers a found task. It runs the pipeline's own checks (origin, the token, the caller, the limits), only
// fewer of them: what a poll needs.
// It is off when tracing or the access log is on: both observe every request.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { classifyPost, type ModernRequest } from "../protocol/modern-request.js";
import { parseJsonRpcBody } from "../protocol/jsonrpc.js";
import { isOriginAllowed } from "../protocol/origin.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import type { GatewayConfig } from "../config/schema.js";
import type { TaskEngine } from "../tasks/engine.js";
import { taskGetBytes } from "../tasks/methods.js";
import { methodClass } from "../metrics/labels.js";
import type { Callers } from "../policy/sets/identity.js";
import { credentialHeaders } from "../policy/sets/identity.js";
import type { LivePolicy, PolicySet } from "../policy/sets/policy-set.js";
import { verifiedFrom, type VerifiedCaller } from "../policy/sets/auth-gate.js";
import { verifyEarly } from "../server/request-auth.js";
import { isJsonContentType } from "../server/read-post.js";
import { readNodeBodyThen, type BodyResult } from "../server/limited-body.js";
import { Exchange } from "../server/exchange.js";
import type { Claims } from "../policy/claims.js";
import type { RateLimiter, RateVerdict } from "../ratelimit/limiter.js";

/**
 * The upstream served at a path: the one whose tasks a poll there may read, under its policy. One per route,
 * made once (not per poll): a poll allocates as little as it can for the collector.
 */
export interface PollRoute {
  readonly upstream: string;
  readonly live: LivePolicy;
  /** Counts an answered poll as the full route would (metrics on), its labels bound once. */
  readonly count: (() => void) | undefined;
}

export interface TaskPollDeps {
  server: GatewayConfig["server"];
  /** The upstream at a request's path (the exact path, never a query), or undefined: the full route's then. */
  routeAt(path: string): PollRoute | undefined;
  callers: Callers;
  engine: TaskEngine;
  /** Rate limits (limits.rules): a poll a rule covers is checked here, before its task is read. */
  limiter: RateLimiter;
}

/** Node's listener for everything else (Hono's, through @hono/node-server). */
export type NodeListener = (incoming: IncomingMessage, outgoing: ServerResponse) => void;

const TASKS_GET = "tasks/get";

/** The request counter's labels of an answered poll (with route "mcp" and the upstream's name). */
export const POLL_COUNT = { era: "modern", method: methodClass({ method: TASKS_GET }), status: 200 } as const;

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

const ANSWER_HEAD = '{"jsonrpc":"2.0","id":';
const ANSWER_MID = ',"result":';
const CLOSING_BRACE = 0x7d;

/**
 * The JSON-RPC answer `{"jsonrpc":"2.0","id":<id>,"result":<result>}` around a result that is stored as UTF-8
 * bytes already: copied once into the answer, never decoded and encoded again. The same bytes as the full
 * route's answer (resultTextResponse) for the same stored JSON. The head is one string written once (a number's
 * JSON is ASCII, so its length is its byte count), the result one copy: three crossings into C++, not five.
 */
export function pollAnswer(id: string | number, result: Buffer): Buffer {
  const head = ANSWER_HEAD + JSON.stringify(id) + ANSWER_MID;
  const headBytes = typeof id === "number" ? head.length : Buffer.byteLength(head);
  const out = Buffer.allocUnsafe(headBytes + result.length + 1);
  out.write(head, 0, headBytes, typeof id === "number" ? "latin1" : "utf8");
  out.set(result, headBytes);
  out[headBytes + result.length] = CLOSING_BRACE;
  return out;
}

/** A header as one string (Node joins repeated ones into an array for a few names only). */
function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** A poll's body before it is read (one object for all, not one per poll). */
const NOT_READ: BodyResult = { ok: false, reason: "aborted" };

/**
 * A Node listener that serves tasks/get polls itself and hands every other
 * request to `next`. Eligibility is read from the request line and headers
 * alone (POST to the MCP path, Mcp-Method: tasks/get), so nothing else pays more
 * than a string compare.
 *
 * A poll of the memory store runs through without a promise: the body's last chunk, the checks, the store's
 * read and the write happen in one callback (no auth.jwt, no asynchronous rate limit). On a shared store
 * (Redis) the read is awaited. Either way the answer is the stored bytes copied once (pollAnswer), never
 * decoded to a string and encoded again.
 */
export function taskPollListener(deps: TaskPollDeps, next: NodeListener): NodeListener {
  const { server, callers, engine } = deps;

  // The header lookups that classifyPost and Callers.digest take, made once and pointed at the request being
  // judged: both call them synchronously, so `judged` cannot change under them. A closure (or a bound
  // function) per poll cost 2–4 % of its CPU under tsx, which names each one (issue 27's profile).
  let judged: Poll | undefined;
  const judgedHeader = (name: string): string | undefined => (judged ? header(judged.headers, name) : undefined);
  const judgedCredentials = (): string[] => (judged ? credentialHeaders(judged.incoming.rawHeaders) : []);

  /**
   * One poll, from its headers to its answer or its hand-over. It is the only object a poll makes of its own
   * (beside its Exchange): who polls is kept on it, and it is the body read's context.
   */
  class Poll {
    /** Who polls: the caller's identity digest, once known. */
    caller = "";
    /** The caller's verified claims (auth.jwt). */
    claims: Claims | undefined = undefined;
    /** The body as read: handed on with the request, since a body can be read only once. */
    private read: BodyResult = NOT_READ;

    constructor(
      private readonly ex: Exchange,
      readonly incoming: IncomingMessage,
      private readonly outgoing: ServerResponse,
      /** The request's headers, read from Node once. */
      readonly headers: IncomingHttpHeaders,
      private readonly set: PolicySet,
      private readonly route: PollRoute,
    ) {}

    /**
     * Who is calling, from the headers alone, before any body is read (as the full route checks the token
     * first): false when the request is the full route's (a refused token, a missing identity header).
     * Synchronous unless a token must be verified (auth.jwt).
     */
    identify(): boolean | Promise<boolean> {
      const set = this.set;
      if (set.identityHeader && !header(this.headers, set.identityHeader)) return false;
      if (!set.auth) {
        this.caller = this.digest(undefined);
        return true;
      }
      // The outcome stays on the Exchange: handed on, it is not verified a second time.
      return verifyEarly(this.ex, set.auth).then((outcome) => {
        if (!outcome.ok) return false;
        const verified = verifiedFrom(outcome.principal);
        this.caller = this.digest(verified);
        this.claims = verified.claims;
        return true;
      });
    }

    /** The caller from the headers, once any token is verified. */
    private digest(verified: VerifiedCaller | undefined): string {
      judged = this;
      try {
        return callers.digest(verified, this.set, judgedHeader, judgedCredentials);
      } finally {
        judged = undefined;
      }
    }

    /** Refused before the body is read: the full route answers (401 at once, without waiting for a body). */
    refused(): void {
      this.ex.carryOn();
      next(this.incoming, this.outgoing);
    }

    /** Answers the poll, or hands it to the full route; whatever this path did not foresee ends the exchange. */
    run(read: BodyResult): void {
      this.read = read;
      try {
        this.start();
      } catch {
        this.failed();
      }
    }

    private start(): void {
      const req = this.request();
      if (req === undefined) return this.handOn();
      // Checked before the task is read; whatever happens next, the full route gets the verdict, never a second check.
      const checked = this.limit();
      if (checked === undefined) return this.answer(req);
      if (!(checked instanceof Promise)) return this.limited(req, checked);
      checked.then(
        (verdict) => this.guard(() => this.limited(req, verdict)),
        () => this.guard(() => this.handOn()),
      );
    }

    /** The poll's request if this path may answer it (a valid 2026-07-28 tasks/get), else undefined. */
    private request(): ModernRequest | undefined {
      const read = this.read;
      if (!read.ok || !isJsonContentType(header(this.headers, "content-type"))) return undefined;
      const parsed = parseJsonRpcBody(read.body);
      if (!parsed.ok) return undefined;
      judged = this;
      let cls: ReturnType<typeof classifyPost>;
      try {
        cls = classifyPost(parsed.message, judgedHeader, TASK_METHODS);
      } finally {
        judged = undefined;
      }
      if (cls.era !== "modern" || "reject" in cls || cls.message.kind !== "request" || cls.message.method !== TASKS_GET)
        return undefined;
      return cls.message;
    }

    /** The rate limits' verdict on the poll, or undefined when no rule covers it. */
    private limit(): RateVerdict | Promise<RateVerdict> | undefined {
      const { limits } = this.set;
      if (limits.empty) return undefined;
      const caller = this.caller;
      return deps.limiter.check(limits, {
        method: TASKS_GET,
        tool: undefined,
        upstream: this.route.upstream,
        claims: this.claims,
        caller: () => caller,
      });
    }

    /** To the full route, with its Exchange (the body already read): whatever this path will not answer. */
    private handOn(): void {
      this.ex.preRead = this.read;
      this.ex.carryOn();
      next(this.incoming, this.outgoing);
    }

    /** Runs a step after a wait (a rate limit's store, a shared task store), as run() runs the first. */
    private guard(step: () => void): void {
      try {
        step();
      } catch {
        this.failed();
      }
    }

    /**
     * A step threw: before anything was written (a store that failed, say) the request is handed on, so the
     * full route answers it (503) and logs why; after that, the exchange ends.
     */
    private failed(): void {
      if (this.outgoing.headersSent) {
        this.outgoing.destroy();
        return;
      }
      try {
        this.handOn();
      } catch {
        this.outgoing.destroy();
      }
    }

    private limited(req: ModernRequest, verdict: RateVerdict): void {
      this.ex.rateVerdict = verdict;
      if (verdict.kind !== "allowed") return this.handOn();
      this.answer(req);
    }

    private answer(req: ModernRequest): void {
      const found = taskGetBytes(engine, req, this.caller, this.route.upstream);
      if (!(found instanceof Promise))
        return found === undefined ? this.handOn() : this.send(pollAnswer(req.id, found.bytes));
      // A shared store: its read is awaited. Anything but a found task, or a store that fails, is the full route's.
      found.then(
        (task) => this.guard(() => (task === undefined ? this.handOn() : this.send(pollAnswer(req.id, task.bytes)))),
        () => this.guard(() => this.handOn()),
      );
    }

    private send(body: Buffer): void {
      // The same status and headers as the full route's resultTextResponse, written by @hono/node-server.
      // A flat list: Node stores it without walking an object's keys; the same header lines as before.
      this.outgoing.writeHead(200, ["content-type", "application/json", "Content-Length", String(body.length)]);
      this.outgoing.end(body);
      this.route.count?.();
    }
  }

  const runPoll = (read: BodyResult, poll: Poll): void => poll.run(read);

  /** With the caller known: read the body and answer (or hand the request on, refused before any body is read). */
  const withCaller = (poll: Poll, known: boolean): void => {
    if (!known) return poll.refused();
    readNodeBodyThen(poll.incoming, server.maxBodyBytes, poll.headers["content-length"], runPoll, poll);
  };

  const serve = (
    incoming: IncomingMessage,
    outgoing: ServerResponse,
    headers: IncomingHttpHeaders,
    route: PollRoute,
    path: string,
  ): void => {
    const ex = Exchange.fromNode(incoming, outgoing, path);
    const poll = new Poll(ex, incoming, outgoing, headers, route.live.current, route);
    let known: boolean | Promise<boolean>;
    try {
      known = poll.identify();
    } catch {
      known = false;
    }
    if (known instanceof Promise) {
      known
        .then(
          (ok) => withCaller(poll, ok),
          () => withCaller(poll, false),
        )
        .catch(() => outgoing.destroy());
    } else withCaller(poll, known);
  };

  return (incoming, outgoing) => {
    const path = incoming.url ?? "";
    if (incoming.method !== "POST") return next(incoming, outgoing);
    // Read from Node once: every check below and the poll's own take them from here.
    const headers = incoming.headers;
    const route = headers["mcp-method"] === TASKS_GET ? deps.routeAt(path) : undefined;
    if (
      !route ||
      !isPollSized(headers["content-length"]) ||
      !PLAIN_HOST.test(headers.host ?? "") ||
      !isOriginAllowed(header(headers, "origin"), server)
    ) {
      next(incoming, outgoing);
      return;
    }
    // serve() hands every failure it can foresee to the full route; anything else ends the exchange, never the process.
    try {
      serve(incoming, outgoing, headers, route, path);
    } catch {
      outgoing.destroy();
    }
  };
}
