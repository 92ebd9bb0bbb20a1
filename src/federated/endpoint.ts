// A federated endpoint (federated.<name>, served at <server.path>/<name>): one 2026-07-28 server over several
// upstreams. Nothing here talks to an upstream: every member request is handed to that upstream's own route
// (through the app, as if the client had called it), so its policy, access rules, credentials, era bridge,
// promotion and tasks apply exactly as on the route, and the member's answer is relayed or merged.
//   - Lists (tools, prompts, resources, templates) are asked of every member at once, within
//     federation.listTimeoutMs; a member that fails or is late is left out (logged, counted), the rest answers.
//   - Each member has a circuit breaker (federation/breaker.ts): after federation.breakerFailures failures in a
//     row (a 5xx answer, a network error, a list past its deadline) it is skipped for a back-off: left out of
//     lists at once, its calls answered 503 upstream_unavailable with Retry-After. Task methods are not: the
//     gateway keeps the tasks, so they are served whatever the member's state.
//     Names become <upstream>__<name>; pages span upstreams (the cursor names each member's own cursor).
//   - A call (tools/call, prompts/get, completion/complete, resources/read) goes to the member its name or
//     URI belongs to, with the member's own name back in the body and in Mcp-Name.
//   - Task methods go to the member the task id names (task-id.ts); a task of another upstream is unknown.
// Legacy (≤ 2025-11-25) clients get a session the gateway holds, whose requests come back here as 2026-07-28
// requests over loopback (legacy-sessions.ts).
import type { AuthGate } from "../policy/sets/auth-gate.js";
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { encodeHeaderValue, type ModernRequest } from "../protocol/modern-request.js";
import {
  invalidArguments,
  invalidParams,
  invalidRequest,
  pinnedArgument,
  unknownTool,
  methodNotAllowed,
  methodNotFound,
  taskNotFound,
  upstreamUnavailable,
} from "../protocol/errors.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { taskUpstream } from "../tasks/task-id.js";
import { readAnswer } from "../web/edit-response.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import type { Breaker } from "../federation/breaker.js";
import { FederatedCatalog } from "../federation/catalog.js";
import type { FederatedCursor } from "../federation/cursor.js";
import { decodePages, encodePages } from "../federation/pages.js";
import { federatedLegacy, type FederatedLegacy, type FederatedLegacyDeps } from "./legacy-sessions.js";
import { ChangeFeed, LIST_KINDS } from "../federation/change-feed.js";
import { TaskHandles } from "../federation/task-handles.js";
import { editAnswerStream } from "./answer-stream-edit.js";
import { federatedListen, type FederatedListenDeps } from "./listen.js";
import type { Exchange } from "../server/exchange.js";
import { pipeline } from "../server/pipeline.js";
import { bindingIssued, forwardStep, sessionStep } from "../replicas/session-steps.js";
import type { Callers } from "../policy/sets/identity.js";
import { authenticateStep, bodyStep, classifyStep, originStep } from "../server/steps.js";
import { observeUpstream } from "../server/observe.js";
import { RESPONSE_ALREADY_SENT } from "../server/node-server.js";
import type { SessionRouting } from "../replicas/session-routing.js";
import { RouteCatalog } from "../catalog/route-catalog.js";
import type { ToolOverride } from "../config/catalog.js";

interface FederatedMember {
  /** The upstream's configured name. */
  name: string;
  /** Its own route, where its requests are served. */
  path: string;
}

export interface FederatedDeps {
  name: string;
  path: string;
  /** The members served now, in the config's order (an upstream not served at the moment is left out). */
  members(): readonly FederatedMember[];
  /**
   * Where the endpoint's tasks may be: its members, and every upstream that was a member since the start and
   * still has a route (retired ones included), so a task made here stays readable here after a reload takes its
   * upstream out of the endpoint.
   */
  taskMembers(): readonly FederatedMember[];
  /** The app: a member's request is served by its route, under its policy, as if the client had called it. */
  dispatch(request: Request): Promise<Response>;
  /** The route handler serving `path` now: a call whose answer goes back unchanged is handed to it directly. */
  memberHandler(path: string): { serve(ex: Exchange): Promise<Response> | Response } | undefined;
  config: GatewayConfig;
  /** The auth gate in force (auth.jwt), shared with every route; undefined without auth. */
  gate(): AuthGate | undefined;
  /** How long a list waits for its members (federation.listTimeoutMs). */
  listTimeoutMs: number;
  /** The gateway's own listener, once it listens: legacy sessions reach this endpoint through it. */
  selfOrigin: FederatedLegacyDeps["selfOrigin"];
  track: FederatedLegacyDeps["track"];
  now: () => number;
  /** The circuit breaker of a member of this endpoint (the same one at each call). */
  breaker(member: string): Breaker;
  /** Seals and opens the task handles of members that serve tasks themselves (federation/task-handles.ts). */
  handles: TaskHandles;
  /** The identity digest `member`'s route gives this request's caller: what a handle is bound to. */
  caller(ex: Exchange, member: string): string;
  /**
   * Whether `member` serves the Tasks extension itself (its route passes its tasks through), as last probed;
   * undefined before its route first asked it.
   */
  upstreamTasks(member: string): boolean | undefined;
  /** Metrics: a member left out of a merged answer; undefined with metrics off. */
  observer?: FederatedObserver | undefined;
  /** Legacy sessions held by another replica are forwarded there (issue 23); absent: every session is here. */
  sessions?: SessionRouting | undefined;
  /** Who is calling (shared by every endpoint): a verified caller's sessions are bound to it. */
  callers: Callers;
  /** The gateway's version, in the endpoint's serverInfo. */
  version: string;
  log: Logger;
}

/** Why a member is missing from a merged answer: late, failed, or skipped by its open breaker. */
type MissingReason = "timeout" | "error" | "open";

export interface FederatedObserver {
  missing(upstream: string, reason: MissingReason): void;
}

export interface FederatedHandler {
  readonly deps: FederatedDeps;
  /** `seen`: the labels of the request counter (metrics on), filled in as the request is classified. */
  serve(ex: Exchange): Promise<Response> | Response;
  /** Its members changed (a reload): its listeners are told that every list changed. */
  listsChanged(): void;
  /** Its legacy sessions end and their loopback connections close. */
  close(): Promise<void>;
}

/** The list methods, and the member of their result that holds the items. */
const LISTS: Readonly<Record<string, string>> = {
  "tools/list": "tools",
  "prompts/list": "prompts",
  "resources/list": "resources",
  "resources/templates/list": "resourceTemplates",
};

/** At most one list-changed flush a second per endpoint (issue 22), whatever its members do. */
const LIST_CHANGED_INTERVAL_MS = 1_000;

/** The most a member's list answer may be: a page of tools with their schemas. */
const MAX_LIST_BYTES = 16 * 1024 * 1024;

/**
 * The endpoint's own overrides (federated.<name>.tools), keyed by prefixed names: built once per config block, so
 * a reload's new block applies from the next request on.
 */
const fedCatalogs = new WeakMap<object, RouteCatalog>();

function fedCatalog(tools: Readonly<Record<string, ToolOverride>> | undefined): RouteCatalog | undefined {
  if (!tools || Object.keys(tools).length === 0) return undefined;
  let catalog = fedCatalogs.get(tools);
  if (!catalog) fedCatalogs.set(tools, (catalog = new RouteCatalog(tools, undefined, "off")));
  return catalog;
}

function complete(result: JsonObject): JsonObject {
  return { resultType: "complete", ...result };
}

export function createFederatedHandler(deps: FederatedDeps): FederatedHandler {
  const { log } = deps;
  const catalog = new FederatedCatalog();
  const memberNames = (): string[] => deps.members().map((m) => m.name);
  const legacy: FederatedLegacy = federatedLegacy(deps);

  /** A request for `member`'s route: the client's headers (credentials, protocol version), this body. */
  const toMember = (
    ex: Exchange,
    member: FederatedMember,
    body: JsonObject,
    name?: string,
    signal: AbortSignal = ex.webRequest().signal,
  ): Promise<Response> => {
    const headers = new Headers(ex.webRequest().headers);
    headers.delete("content-length");
    if (name !== undefined) headers.set("mcp-name", encodeHeaderValue(name));
    const url = new URL(member.path, ex.url());
    return deps.dispatch(new Request(url, { method: "POST", headers, body: JSON.stringify(body), signal }));
  };
  const feed = new ChangeFeed(LIST_CHANGED_INTERVAL_MS);
  /** Every list may have changed (a member came or went): one flush, as for a member's own change. */
  const listsChanged = (): void => {
    for (const kind of LIST_KINDS) feed.changed(kind);
  };
  const listenDeps: FederatedListenDeps = {
    members: () => deps.members(),
    open: (ex, member, body, signal) => toMember(ex, member, body, undefined, signal),
    taskTarget: (ex, id) => taskTarget(ex, id),
    catalog,
    feed,
    breaker: (member) => deps.breaker(member),
    get ackTimeoutMs() {
      return deps.listTimeoutMs;
    },
    keepAliveMs: deps.config.server.sseKeepAliveMs,
    log,
  };

  /** A member's outcome for its breaker; a request the client gave up on says nothing about the member. */
  const outcome = (ex: Exchange, member: FederatedMember, breaker: Breaker, failed: boolean): void => {
    if (!failed) {
      // A member back from an open breaker is back in the lists.
      if (breaker.state().state !== "closed") listsChanged();
      return breaker.succeeded();
    }
    if (ex.clientGone()) return;
    const allowed = breaker.allows();
    breaker.failed();
    if (!allowed || breaker.allows()) return;
    log.warn("federated endpoint: an upstream failed repeatedly and is skipped for a while", {
      federated: deps.name,
      upstream: member.name,
      retryAfterMs: breaker.retryAfterMs(),
    });
    // Its items leave the lists while it is skipped: listeners re-list.
    listsChanged();
  };

  const leftOut = (member: FederatedMember, reason: MissingReason, cause: string): undefined => {
    deps.observer?.missing(member.name, reason);
    // An open breaker was logged when it opened.
    if (reason !== "open")
      log.warn(
        reason === "timeout"
          ? "federated list: an upstream did not answer in time"
          : "federated list: an upstream failed",
        { federated: deps.name, upstream: member.name, cause },
      );
    return undefined;
  };

  /**
   * A member's answer to a request of ours (id 1), within the list deadline; undefined when it failed, was late,
   * or its breaker is open (then it is not asked).
   */
  const ask = async (ex: Exchange, member: FederatedMember, body: JsonObject): Promise<JsonObject | undefined> => {
    const breaker = deps.breaker(member.name);
    if (!breaker.allows()) return leftOut(member, "open", "breaker open");
    // A member past the deadline is aborted, not left running: its route cancels the upstream request and frees
    // the connection, and nothing more of its answer is read (up to MAX_LIST_BYTES per member and list).
    const deadline = new AbortController();
    const signal = AbortSignal.any([ex.webRequest().signal, deadline.signal]);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => {
        deadline.abort();
        resolve("late");
      }, deps.listTimeoutMs);
    });
    let status = 0;
    try {
      const answered = await Promise.race([
        toMember(ex, member, body, undefined, signal).then((r) => {
          status = r.status;
          return readAnswer(r, 1, MAX_LIST_BYTES);
        }),
        late,
      ]);
      if (answered === "late") {
        outcome(ex, member, breaker, true);
        return leftOut(member, "timeout", `no answer in ${deps.listTimeoutMs} ms`);
      }
      // The member answered: only a 5xx (its route could not reach it, or it broke) counts against it.
      outcome(ex, member, breaker, status >= 500);
      if (!answered || !isRecord(answered.result))
        return leftOut(member, "error", isRecord(answered?.error) ? String(answered.error.message) : "no answer");
      return answered.result;
    } catch (err) {
      outcome(ex, member, breaker, true);
      return leftOut(member, "error", (err as Error).message);
    } finally {
      clearTimeout(timer);
    }
  };

  /** A call for `member` (a tool, a prompt, a resource): refused while its breaker is open, counted for it. */
  const call = async (
    ex: Exchange,
    req: ModernRequest,
    member: FederatedMember,
    body: JsonObject,
    name: string | undefined,
  ): Promise<Response> => {
    const breaker = deps.breaker(member.name);
    observeUpstream(ex, member.name);
    if (!breaker.allows()) return faultResponse(req.id, upstreamUnavailable(member.name, breaker.retryAfterMs()));
    let res: Response;
    const env = ex.node;
    // A member that keeps its own tasks (or may: its route has not asked it yet) gets its answer edited (task
    // handles): that one goes through the app.
    const handler = env && deps.upstreamTasks(member.name) === false ? deps.memberHandler(member.path) : undefined;
    try {
      res = handler
        ? await handler.serve(
            ex.forMember(member.path, Buffer.from(JSON.stringify(body)), {
              "mcp-name": name === undefined ? undefined : encodeHeaderValue(name),
            }),
          )
        : await toMember(ex, member, body, name);
    } catch (err) {
      outcome(ex, member, breaker, true);
      throw err;
    }
    // A pass-through answer was written to the client's socket already; its status is there.
    const status = res === RESPONSE_ALREADY_SENT && env ? env.outgoing.statusCode : res.status;
    outcome(ex, member, breaker, status >= 500);
    // A member that keeps its own tasks answers with its own id: the client gets a handle for it instead.
    if (req.method !== "tools/call" || handler) return res;
    const owner = deps.caller(ex, member.name);
    return editAnswerStream(
      res,
      req.id,
      // Its route has asked it by the time it answers.
      (result) =>
        typeof result.taskId === "string" && deps.upstreamTasks(member.name) === true
          ? {
              ...result,
              taskId: deps.handles.issue({ upstream: member.name, upstreamId: result.taskId, owner }),
            }
          : result,
      MAX_LIST_BYTES,
    );
  };

  /**
   * Where a task id a client names lives: a handle opens to its member's own task (for the caller it was made
   * for only), a gateway task id names its member. A member that keeps its own tasks is only ever named by
   * handles (its raw ids are bound to nobody). Undefined: unknown here, as an id of another caller is.
   */
  const taskTarget = (ex: Exchange, id: string): { upstream: string; id: string } | undefined => {
    if (TaskHandles.isHandle(id)) {
      const handle = deps.handles.open(id);
      if (!handle || handle.owner !== deps.caller(ex, handle.upstream)) return undefined;
      return { upstream: handle.upstream, id: handle.upstreamId };
    }
    const upstream = taskUpstream(id);
    return deps.upstreamTasks(upstream) === true ? undefined : { upstream, id };
  };

  /** tasks/get, tasks/update, tasks/cancel: to the member the id names, under the member's own id. */
  const task = async (ex: Exchange, req: ModernRequest, post: JsonObject, id: string): Promise<Response> => {
    const target = taskTarget(ex, id);
    const member = target && deps.taskMembers().find((m) => m.name === target.upstream);
    if (!target || !member)
      return faultResponse(req.id, taskNotFound(req.method === "tasks/get" ? "retrieve" : req.method.slice(6)));
    if (target.id === id) return toMember(ex, member, post, undefined);
    // Mcp-Name names the task too (the member checks that it matches the body).
    const res = await toMember(ex, member, { ...post, params: { ...req.params, taskId: target.id } }, target.id);
    return editAnswerStream(
      res,
      req.id,
      (result) => (result.taskId === target.id ? { ...result, taskId: id } : result),
      MAX_LIST_BYTES,
    );
  };

  const memberNamed = (name: string): FederatedMember | undefined => deps.members().find((m) => m.name === name);

  const list = async (ex: Exchange, req: ModernRequest): Promise<Response> => {
    const key = LISTS[req.method] as string;
    const overrides = fedCatalog(deps.config.federated[deps.name]?.tools);
    const members = deps.members();
    let pending: FederatedCursor[];
    if (req.params.cursor === undefined) pending = members.map((m) => ({ upstream: m.name }));
    else {
      const decoded = typeof req.params.cursor === "string" ? decodePages(req.params.cursor) : undefined;
      if (!decoded) return faultResponse(req.id, invalidParams("params.cursor is not a cursor this endpoint gave"));
      pending = decoded.filter((p) => memberNamed(p.upstream) !== undefined);
    }
    const envelope = { ...req.params };
    delete envelope.cursor;
    const pages = await Promise.all(
      pending.map(async (p) => {
        const member = memberNamed(p.upstream) as FederatedMember;
        const params = p.cursor === undefined ? envelope : { ...envelope, cursor: p.cursor };
        const result = await ask(ex, member, { jsonrpc: "2.0", id: 1, method: req.method, params });
        return { member, result };
      }),
    );
    const items: unknown[] = [];
    const next: FederatedCursor[] = [];
    // Cache hints (2026-07-28 lists carry them): the shortest freshness, and private if any part is private.
    let ttlMs: number | undefined;
    let cacheScope = "public";
    for (const { member, result } of pages) {
      if (!result) continue;
      if (typeof result.ttlMs === "number") ttlMs = Math.min(ttlMs ?? result.ttlMs, result.ttlMs);
      if (result.cacheScope === "private") cacheScope = "private";
      const got = Array.isArray(result[key]) ? (result[key] as unknown[]) : [];
      const position = pending.find((p) => p.upstream === member.name);
      if (position?.cursor === undefined) catalog.restart(key, member.name);
      const shown = catalog.present(key, member.name, got);
      items.push(...(key === "tools" && overrides ? overrides.overrides.catalogView(shown) : shown));
      if (typeof result.nextCursor === "string") next.push({ upstream: member.name, cursor: result.nextCursor });
    }
    return jsonResponse(200, {
      jsonrpc: "2.0",
      id: req.id,
      result: complete({
        [key]: items,
        ttlMs: ttlMs ?? 0,
        cacheScope,
        ...(next.length > 0 && { nextCursor: encodePages(next) }),
      }),
    });
  };

  const discover = async (ex: Exchange, req: ModernRequest): Promise<Response> => {
    const answers = await Promise.all(
      deps.members().map((m) => ask(ex, m, { jsonrpc: "2.0", id: 1, method: req.method, params: req.params })),
    );
    const found = answers.filter((a): a is JsonObject => a !== undefined);
    const capabilities: JsonObject = {};
    for (const a of found) {
      if (!isRecord(a.capabilities)) continue;
      for (const [k, v] of Object.entries(a.capabilities)) {
        const had = capabilities[k];
        if (!isRecord(v) || !isRecord(had)) capabilities[k] = v;
        // A list announces its changes when any member's does (listen.ts relays them).
        else
          capabilities[k] = {
            ...had,
            ...v,
            ...((had.listChanged === true || v.listChanged === true) && { listChanged: true }),
          };
      }
    }
    const base = found[0] ?? {};
    return jsonResponse(200, {
      jsonrpc: "2.0",
      id: req.id,
      result: complete({
        ...base,
        capabilities,
        serverInfo: { name: `mcp-task-gateway/${deps.name}`, version: deps.version },
      }),
    });
  };

  /** A request about one named item (a tool, a prompt): to its member, with the member's own name. */
  const byName = (
    ex: Exchange,
    req: ModernRequest,
    post: JsonObject,
    federated: unknown,
    rename: (original: string) => JsonObject,
    header: boolean,
  ) => {
    const kind = req.method === "tools/call" ? "tools" : "prompts";
    const target = typeof federated === "string" ? catalog.resolve(kind, federated, memberNames()) : undefined;
    const member = target && memberNamed(target.upstream);
    if (!target || !member) return faultResponse(req.id, invalidParams(`Unknown name: ${String(federated)}`));
    return call(ex, req, member, { ...post, params: rename(target.original) }, header ? target.original : undefined);
  };

  /**
   * A tools/call: the endpoint's overrides first (its names back to the prefixed ones, pinned values in, defaults
   * filled, narrowed arguments checked), then to the member, whose own route applies the upstream's catalog.
   */
  const toolCall = (ex: Exchange, req: ModernRequest, post: JsonObject) => {
    const overrides = fedCatalog(deps.config.federated[deps.name]?.tools);
    const name = req.params.name;
    if (!overrides || typeof name !== "string")
      return byName(ex, req, post, name, (original) => ({ ...req.params, name: original }), true);
    const args = isRecord(req.params.arguments) ? req.params.arguments : {};
    const mapped = overrides.mapCall(name, args);
    if ("reason" in mapped)
      return faultResponse(
        req.id,
        mapped.reason === "unknown_tool" ? unknownTool(name) : pinnedArgument(name, mapped.argument),
      );
    const verdict = overrides.check("", mapped);
    if (verdict.kind === "invalid") return faultResponse(req.id, invalidArguments(name, verdict.errors));
    return byName(
      ex,
      req,
      post,
      mapped.upstreamName,
      (original) => ({ ...req.params, name: original, arguments: mapped.args }),
      true,
    );
  };

  const request = async (ex: Exchange, req: ModernRequest, post: JsonObject): Promise<Response> => {
    if (req.method in LISTS) return list(ex, req);
    if (req.method === "server/discover") return discover(ex, req);
    if (req.method === "ping") return jsonResponse(200, { jsonrpc: "2.0", id: req.id, result: complete({}) });
    if (req.method === "tools/call") return toolCall(ex, req, post);
    if (req.method === "prompts/get")
      return byName(ex, req, post, req.params.name, (name) => ({ ...req.params, name }), true);
    if (req.method === "completion/complete") {
      const ref = isRecord(req.params.ref) ? req.params.ref : {};
      if (ref.type === "ref/prompt")
        return byName(ex, req, post, ref.name, (name) => ({ ...req.params, ref: { ...ref, name } }), false);
      if (ref.type === "ref/resource")
        return byUri(ex, req, post, ref.uri, (uri) => ({ ...req.params, ref: { ...ref, uri } }), false);
      return faultResponse(req.id, invalidParams("params.ref must name a prompt or a resource"));
    }
    if (
      req.method === "resources/read" ||
      req.method === "resources/subscribe" ||
      req.method === "resources/unsubscribe"
    )
      return byUri(ex, req, post, req.params.uri, (uri) => ({ ...req.params, uri }), req.method === "resources/read");
    if (TASK_METHODS.has(req.method) && typeof req.params.taskId === "string")
      return task(ex, req, post, req.params.taskId);
    if (req.method === "subscriptions/listen") return federatedListen(ex, req, listenDeps);
    return faultResponse(req.id, methodNotFound(req.method));
  };

  /** A request about one resource: to the member that listed its URI, with the URI that member gave. */
  const byUri = (
    ex: Exchange,
    req: ModernRequest,
    post: JsonObject,
    uri: unknown,
    reuri: (original: string) => JsonObject,
    header: boolean,
  ) => {
    const found = typeof uri === "string" ? catalog.resolveUri(uri) : undefined;
    const target = found && { upstream: found.upstream, original: found.uri };
    const member = target && memberNamed(target.upstream);
    if (!target || !member)
      return faultResponse(req.id, invalidParams(`Unknown resource: ${String(uri)}; list the resources first`));
    return call(ex, req, member, { ...post, params: reuri(target.original) }, header ? target.original : undefined);
  };

  /** The end of the pipeline: a legacy session's request, or a 2026-07-28 request to serve from the members. */
  const handle = (ex: Exchange): Promise<Response> | Response => {
    if (ex.method !== "POST") return legacy.other(ex) ?? faultResponse(null, methodNotAllowed("POST"));
    const message = ex.post?.parsed?.message;
    const id: JsonRpcId = ex.post?.parsed?.id ?? null;
    if (!ex.post?.parsed || !isRecord(message)) return faultResponse(id, invalidRequest());
    const onSession = legacy.onSession(ex, message);
    if (onSession) return onSession;
    const cls = ex.cls;
    if (cls?.era !== "modern") return legacy.post(ex, message, id);
    if ("reject" in cls)
      return jsonResponse(cls.reject.status, { jsonrpc: "2.0", id: cls.reject.id, error: cls.reject.error });
    if (cls.message.kind === "notification") return new Response(null, { status: 202 });
    return request(ex, cls.message, message);
  };

  // auth.jwt: the endpoint checks the token itself, as a route does, so a bad one is a 401 here, not a list every
  // member refused (empty) or a session opened for nobody. The members check it again (cached). Rate limits and
  // access rules are the members' routes' (each member request goes through its route's pipeline, once).
  const serve = pipeline(
    [
      originStep(deps.config.server, log),
      authenticateStep(() => deps.gate(), log),
      bodyStep(deps.config.server.maxBodyBytes, log),
      // A legacy session must be its verified caller's; one another process holds is served by its owner.
      sessionStep(deps.sessions, deps.callers, log),
      classifyStep(),
      forwardStep(deps.sessions),
    ],
    bindingIssued(handle),
  );

  return {
    deps,
    serve,
    listsChanged,
    close: () => {
      feed.close();
      return legacy.close();
    },
  };
}
