// One client request on its way through the gateway: made where the request enters (the Node listener's lean
// tasks/get path, the Hono app, the internal listener, a federated endpoint handing a call to its member), and
// handed to every step of the pipeline (pipeline.ts) and to the endpoint that answers it.
//
// It carries what the request is (the client's own headers, its path, the body and the message parsed from it,
// whether the client is still there) and what the steps learnt about it (the policy in force, the verified token,
// the caller, the verdicts of the rate limits and of a replica that forwarded it, what the upstream is to see).
// Everything a request learns lives here, on the request: no step keeps per-request state anywhere else.
//
// The two ways a request can be served meet here and nowhere else: on the Node listener (@hono/node-server, the
// normal case) headers are read from Node's IncomingMessage without building a web Headers object, and the answer
// may be written to the ServerResponse directly; through app.fetch (tests, other runtimes) the web Request is read.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "hono";
import type { ParsedBody } from "../protocol/jsonrpc.js";
import type { Classification } from "../protocol/modern-request.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import type { Fault } from "../protocol/errors.js";
import type { AuthOutcome } from "../auth/jwt-verifier.js";
import type { AuthGate } from "../policy/sets/auth-gate.js";
import type { PolicySet } from "../policy/sets/policy-set.js";
import type { VerifiedCaller } from "../policy/sets/auth-gate.js";
import type { RateVerdict } from "../ratelimit/limiter.js";
import type { EraLabel } from "../metrics/labels.js";
import type { BodyResult } from "./limited-body.js";

export interface NodeEnv {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
}

/** A POST's body as read, and its JSON-RPC message when the content type is JSON (read-post.ts). */
export interface PostBody {
  body: Buffer;
  /** Undefined when the content type is not JSON (the upstream judges such bodies when no policy applies). */
  parsed: Extract<ParsedBody, { ok: true }> | undefined;
}

/** What the request's observers (server span, access log) learn as it goes; undefined when nothing observes. */
export interface Observed {
  /** Milliseconds until the upstream's answer headers, when the request went upstream as it is. */
  upstreamMs: number | undefined;
  /** The member a federated endpoint's request went to (the endpoint's path names no upstream). */
  upstream?: string;
}

/** The request counter's labels (metrics on), filled in as the request is classified. */
export interface RequestLabels {
  era: EraLabel;
  method: string;
  /** The configured name of the upstream that served it (its route, or a federated endpoint's one member). */
  upstream?: string | undefined;
}

/**
 * What a replica that forwarded this request had decided where it landed (replicas/forward-token.ts): the
 * credential proved it for this very request (method, path, body), once.
 */
export interface ForwardedVerdict {
  /** The sending replica. */
  replica: string;
  /** Rate limits were decided there (and let it through): not checked again here, so it is counted once. */
  limitsDecided: boolean;
}

function nodeEnv(env: unknown): NodeEnv | undefined {
  if (typeof env !== "object" || env === null) return undefined;
  const { incoming, outgoing } = env as Partial<NodeEnv>;
  return incoming && outgoing ? { incoming, outgoing } : undefined;
}

/** Where the lean path leaves its Exchange on a request it hands to the app: the request carries it on. */
const CARRIED = Symbol("mcp-task-gateway exchange");

type Carrier = IncomingMessage & { [CARRIED]?: Exchange };

const HONO_KEY = "mcpGatewayExchange";

export class Exchange {
  /** The policy the request is served under, read once when it starts (a reload swaps the set, not this). */
  set: PolicySet | undefined = undefined;
  /** The body, read once (read-post.ts). */
  post: PostBody | undefined = undefined;
  /** The POST's message classified by era (the classify step): what the later steps and the endpoint act on. */
  cls: Classification | undefined = undefined;
  /** An edit of the answer the access step asked for (tools/list filtered to what the caller may call). */
  answerEdit: ResultEdit | undefined = undefined;
  /** A body read before the pipeline ran (the lean path, a federated member's view): the body step takes it. */
  preRead: BodyResult | undefined = undefined;
  /** A token verified before the pipeline ran (the lean path), under this gate: not verified a second time. */
  earlyAuth: { gate: AuthGate; outcome: AuthOutcome } | undefined = undefined;
  /** Who a verified token says is calling (auth.jwt). */
  verified: VerifiedCaller | undefined = undefined;
  /** The headers the upstream is to see, when a step changed them (the token dropped, the identity header set). */
  upstreamHeaderList: string[] | undefined = undefined;
  /**
   * Set by the credential step (upstreams.<name>.oauth): replaces the upstream token in upstreamHeaderList with a
   * fresh one, after the upstream refused it (401). False when none could be had.
   */
  renewCredential: (() => Promise<boolean>) | undefined = undefined;
  /** The rate limits' verdict, once reached (by the limit step, or the lean path before it handed the request on). */
  rateVerdict: RateVerdict | undefined = undefined;
  /** Set when another replica forwarded this request with a valid, unused credential bound to it. */
  forwarded: ForwardedVerdict | undefined = undefined;
  /** The rate-limit step ran for this request (whatever its verdict): a replica it is forwarded to does not run it again. */
  limitsDecided = false;
  /** The internal listener of the process holding the request's session, when that is another process. */
  sessionOwner: string | undefined = undefined;
  /**
   * Binds a session id issued in answer to this request (an initialize by a verified caller) to its caller, before
   * the client learns it: undefined once bound (or when nothing is to be bound), else the refusal to answer with.
   */
  onSessionIssued: ((sessionId: string) => Promise<Fault | undefined>) | undefined = undefined;
  /** Observers' record (tracing or the access log on). */
  observed: Observed | undefined = undefined;
  /** The request counter's labels (metrics on). */
  seen: RequestLabels | undefined = undefined;
  /** Marks a federated endpoint's request to a member: observed once, on the endpoint. */
  member = false;

  private constructor(
    readonly method: string,
    /** The request's path, without its query. */
    readonly path: string,
    readonly node: NodeEnv | undefined,
    /** The web request, when served through app.fetch (undefined on the Node path until asked for). */
    private readonly web: Request | undefined,
    private readonly hono: Context | undefined,
  ) {}

  /** A request on the Node listener, before any framework saw it (the lean tasks/get path). */
  static fromNode(incoming: IncomingMessage, outgoing: ServerResponse, path: string): Exchange {
    return new Exchange(incoming.method ?? "GET", path, { incoming, outgoing }, undefined, undefined);
  }

  /**
   * The request's Exchange in the Hono app: the one an observer or the lean path made already, else a new one.
   * Kept on the context, so middleware and the endpoint share it.
   */
  static of(c: Context): Exchange {
    const known = c.get(HONO_KEY as never) as Exchange | undefined;
    if (known) return known;
    const env = nodeEnv(c.env);
    const carried = env && (env.incoming as Carrier)[CARRIED];
    if (carried) {
      (env.incoming as Carrier)[CARRIED] = undefined;
      carried.adopt(c);
      return carried;
    }
    return new Exchange(c.req.method, c.req.path, env, env ? undefined : c.req.raw, c);
  }

  /** Keeps this Exchange on the Hono context, for the steps after a middleware that made it. */
  keepOn(c: Context): void {
    c.set(HONO_KEY as never, this as never);
  }

  /** The Hono context a carried Exchange reached (its web request is read from there when asked). */
  private adopted: Context | undefined;

  private adopt(c: Context): void {
    this.adopted = c;
  }

  /** The lean path hands the request to the app: the Exchange travels with it, so nothing is done twice. */
  carryOn(): void {
    if (this.node) (this.node.incoming as Carrier)[CARRIED] = this;
  }

  /**
   * A federated endpoint's call to one member, as the member's own request: the same client, socket and
   * response, the member's path, the body with the member's own names, some headers replaced (undefined
   * removes one). What the request learnt on its way (the verified token, its observers) is the member's too.
   */
  forMember(path: string, body: Buffer, replaced: Readonly<Record<string, string | undefined>>): Exchange {
    const env = this.node;
    if (!env) throw new Error("a member view needs the Node request");
    const incoming = env.incoming;
    const headers: IncomingMessage["headers"] & Record<string, string | string[] | undefined> = {
      ...incoming.headers,
      "content-length": String(body.length),
    };
    for (const [name, value] of Object.entries(replaced)) {
      if (value === undefined) delete headers[name];
      else headers[name] = value;
    }
    const q = (incoming.url ?? "").indexOf("?");
    const view = Object.create(incoming, {
      url: { value: q === -1 ? path : path + (incoming.url ?? "").slice(q) },
      headers: { value: headers },
      rawHeaders: { value: replacedRaw(incoming.rawHeaders, { ...replaced, "content-length": String(body.length) }) },
    }) as IncomingMessage;
    const member = new Exchange(this.method, path, { incoming: view, outgoing: env.outgoing }, undefined, undefined);
    member.preRead = { ok: true, body };
    member.verified = this.verified;
    member.earlyAuth = this.earlyAuth;
    member.observed = this.observed;
    member.member = true;
    return member;
  }

  /** One request header (lowercase name), as the client sent it. */
  header(name: string): string | undefined {
    if (this.node) {
      const v = this.node.incoming.headers[name];
      return Array.isArray(v) ? v.join(", ") : v;
    }
    return this.web?.headers.get(name) ?? undefined;
  }

  /** The headers exactly as the client sent them, as Node's flat rawHeaders list (name, value, …). */
  clientHeaders(): string[] {
    if (this.node) return this.node.incoming.rawHeaders;
    const raw: string[] = [];
    this.web?.headers.forEach((value, name) => raw.push(name, value));
    return raw;
  }

  /** The headers as the upstream is to see them: the client's, or what a step made of them. */
  upstreamHeaders(): string[] {
    return this.upstreamHeaderList ?? this.clientHeaders();
  }

  /** The query string of the request ("" or "?…"), without parsing a URL on the Node path. */
  search(): string {
    const raw = this.node ? (this.node.incoming.url ?? "") : (this.web?.url ?? "");
    const q = raw.indexOf("?");
    if (q === -1) return "";
    const hash = raw.indexOf("#", q);
    return hash === -1 ? raw.slice(q) : raw.slice(q, hash);
  }

  /** The scheme the client used ("http" on the Node listener; the web request's own otherwise). */
  scheme(): string {
    return this.node ? "http" : new URL(this.webRequest().url).protocol.slice(0, -1);
  }

  /** The client's address, when the Node listener knows it. */
  clientAddress(): string | undefined {
    return this.node?.incoming.socket.remoteAddress;
  }

  /** The Host the client named. */
  host(): string | undefined {
    return this.node ? this.node.incoming.headers.host : new URL(this.webRequest().url).host;
  }

  /**
   * The request as a web Request (a federated endpoint builds its members' requests from it). On the Node path
   * it is @hono/node-server's, built only when asked for.
   */
  webRequest(): Request {
    const c = this.hono ?? this.adopted;
    if (this.web) return this.web;
    if (c) return c.req.raw;
    throw new Error("no web request for a request the Hono app never saw");
  }

  /** The full URL of the request (a federated endpoint resolves its members' paths against it). */
  url(): string {
    return this.webRequest().url;
  }

  /** A session id was issued in answer to this request: bound to its verified caller first, once. */
  sessionIssued(sessionId: string): Promise<Fault | undefined> | undefined {
    const bind = this.onSessionIssued;
    this.onSessionIssued = undefined;
    return bind?.(sessionId);
  }

  /** Whether the client went away before its answer was complete. */
  clientGone(): boolean {
    if (this.node) return this.node.outgoing.destroyed && !this.node.outgoing.writableFinished;
    return this.web?.signal.aborted ?? false;
  }

  /**
   * Calls `onLeave` once if the client goes away before its response finished (Node: the response closes
   * unfinished; web: the request's signal aborts).
   */
  onClientLeft(onLeave: () => void): void {
    if (this.node) {
      const out = this.node.outgoing;
      out.once("close", () => {
        if (!out.writableFinished) onLeave();
      });
    } else this.web?.signal.addEventListener("abort", onLeave, { once: true });
  }

  /**
   * A controller that aborts when the client goes away before its response finished; the gateway may abort it
   * too (shutdown). One controller instead of combining signals, which costs more and, on Node 20, retains more.
   */
  controller(): AbortController {
    const controller = new AbortController();
    this.onClientLeft(() => controller.abort());
    return controller;
  }
}

function replacedRaw(raw: readonly string[], replaced: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  const done = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!(name in replaced)) out.push(raw[i] as string, raw[i + 1] as string);
    else if (!done.has(name)) {
      done.add(name);
      const value = replaced[name];
      if (value !== undefined) out.push(name, value);
    }
  }
  for (const [name, value] of Object.entries(replaced))
    if (!done.has(name) && value !== undefined) out.push(name, value);
  return out;
}
