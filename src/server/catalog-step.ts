// The catalog step of a named route (catalog/, issue 36): what the client is shown of the upstream's tools and
// prompts, and its calls mapped back to the upstream's, before rate limits, access rules, tasks or the upstream
// see the request. So every rule of the upstream (limits, access, task rules) names its tools by the upstream's
// own names, as the catalog's keys do.
//
//   tools/list, prompts/list  an answer edit (the access step composes its own before it): the upstream's
//                             definitions are learnt for validation, then shown as overridden.
//   tools/call                a name renamed away is unknown (-32602 unknown_tool); a pinned argument sent is
//                             refused (pinned_argument); the arguments, defaults filled, are checked against
//                             the tool as listed (invalid_arguments, or a warning); then the request is
//                             rewritten: the upstream's name (body and Mcp-Name), pinned values merged in.
//   prompts/get               the upstream's name back (body and Mcp-Name).
//
// The rewritten request is what every path after this step sends upstream (pass-through, both bridges, tasks);
// the client's own request (ex.clientPost) is what a replica forwards, since the owner runs this step again.
import type { CatalogObserver, CatalogOutcome } from "../catalog/observer.js";
import type { RouteCatalog } from "../catalog/route-catalog.js";
import type { Logger } from "../log/logger.js";
import type { Callers } from "../policy/sets/identity.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import {
  catalogBatch,
  invalidArguments,
  pinnedArgument,
  unknownPrompt,
  unknownTool,
  type Fault,
} from "../protocol/errors.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { classifyPost, encodeHeaderValue, META, MODERN_VERSION } from "../protocol/modern-request.js";
import { readAnswer } from "../web/edit-response.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { faultResponse } from "../web/json-response.js";
import type { Exchange } from "./exchange.js";
import { callerOf } from "./identify.js";
import { step, type Step, type StepOutcome } from "./pipeline.js";

export interface CatalogStepDeps {
  callers: Callers;
  log: Logger;
  /**
   * The app (app.fetch, as a federated endpoint's member request): a caller's tools are listed through its own
   * route when a call names a tool whose definition is not known yet. Absent: such a call is not validated.
   */
  catalogDispatch?: ((request: Request) => Promise<Response>) | undefined;
  /** Metrics: each refused, warned or unvalidated call; undefined with metrics off. */
  catalogObserver?: CatalogObserver | undefined;
}

const GUARDED = new Set(["tools/call", "tools/list", "prompts/get", "prompts/list"]);

/** The request rewritten (`params` replaced, Mcp-Name set to `name`): what every later step and path sees. */
function rewrite(ex: Exchange, message: JsonObject, params: JsonObject, name: string): void {
  const post = ex.post;
  if (!post?.parsed) return;
  const next = { ...message, params };
  ex.clientPost ??= post;
  ex.post = { body: Buffer.from(JSON.stringify(next)), parsed: { ...post.parsed, message: next } };
  if (ex.header("mcp-name") === undefined) return;
  const header = encodeHeaderValue(name);
  const raw = ex.upstreamHeaders();
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    out.push(raw[i] as string, (raw[i] as string).toLowerCase() === "mcp-name" ? header : (raw[i + 1] as string));
  ex.upstreamHeaderList = out;
  if (ex.cls?.era === "modern")
    ex.cls = classifyPost(next, (h) => (h === "mcp-name" ? header : ex.header(h)), TASK_METHODS);
}

/** Logs a schema the gateway will not validate with, once per route catalog and reason. */
const reported = new WeakMap<RouteCatalog, Set<string>>();

function reportUnusable(log: Logger, catalog: RouteCatalog, upstream: string, tool: string, why: string): void {
  let seen = reported.get(catalog);
  if (!seen) reported.set(catalog, (seen = new Set()));
  const key = `${tool}\n${why}`;
  if (seen.has(key) || seen.size >= 1000) return;
  seen.add(key);
  log.warn("a tool's inputSchema is not used for validation", { upstream, tool, why });
}

/** Client headers that are not carried to the listing the gateway makes for the caller: the transport's own. */
const NOT_CARRIED = new Set([
  "content-length",
  "content-type",
  "accept",
  "transfer-encoding",
  "connection",
  "host",
  "last-event-id",
  "mcp-session-id",
  "mcp-protocol-version",
  "mcp-method",
  "mcp-name",
]);

/** Most pages the gateway reads when it lists a caller's tools itself. */
const MAX_LIST_PAGES = 20;
const MAX_LIST_BYTES = 16 * 1024 * 1024;

/**
 * tools/list on the caller's behalf, as a 2026-07-28 request to this very route with the client's own headers
 * (its credentials, Origin, identity header): the route's pipeline serves it as any list (access rules, this
 * step's answer edit, which learns the definitions for this caller; it counts against the caller's rate limits),
 * whatever era the upstream speaks. True when every page was read.
 */
async function listOnBehalf(
  ex: Exchange,
  dispatch: (request: Request) => Promise<Response>,
  path: string,
  signal: AbortSignal,
): Promise<boolean> {
  const raw = ex.clientHeaders();
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!NOT_CARRIED.has(name) && !name.startsWith("mcp-param-")) headers.append(name, raw[i + 1] as string);
  }
  headers.set("content-type", "application/json");
  headers.set("accept", "application/json, text/event-stream");
  headers.set("mcp-protocol-version", MODERN_VERSION);
  headers.set("mcp-method", "tools/list");
  const url = `http://${ex.host() ?? "localhost"}${path}`;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const params: JsonObject = {
      ...(cursor !== undefined && { cursor }),
      _meta: {
        [META.protocolVersion]: MODERN_VERSION,
        [META.clientCapabilities]: {},
        [META.clientInfo]: { name: "mcp-task-gateway", version: "catalog" },
      },
    };
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params });
    const res = await dispatch(new Request(url, { method: "POST", headers, body, signal }));
    const answer = await readAnswer(res, 1, MAX_LIST_BYTES);
    if (!answer || !isRecord(answer.result)) return false;
    cursor = typeof answer.result.nextCursor === "string" ? answer.result.nextCursor : undefined;
    if (cursor === undefined) return true;
  }
  return false;
}

/**
 * `path`: the route's own, where the gateway lists a caller's tools; `listTimeoutMs`: how long a call waits for that
 * listing (upstream.controlTimeoutMs) before it goes on checked against its narrowed arguments only.
 */
export function catalogStep(deps: CatalogStepDeps, upstream: string, path: string, listTimeoutMs: number): Step {
  const { log } = deps;
  const observed = deps.catalogObserver;

  const call = (ex: Exchange, catalog: RouteCatalog, id: JsonRpcId, message: JsonObject): StepOutcome => {
    const params = isRecord(message.params) ? message.params : {};
    const name = typeof params.name === "string" ? params.name : "";
    const args = isRecord(params.arguments) ? params.arguments : {};
    const mapped = catalog.mapCall(name, args);
    const refuse = (fault: Fault, outcome: CatalogOutcome): Response => {
      observed?.call(upstream, outcome);
      return faultResponse(id, fault);
    };
    if ("reason" in mapped) {
      if (mapped.reason === "unknown_tool") return refuse(unknownTool(mapped.tool), "unknown_tool");
      return refuse(pinnedArgument(mapped.tool, mapped.argument), "pinned_argument");
    }
    // A tool access rules deny is left to the access step: nothing here may tell such a caller about it.
    const set = ex.set;
    const denied = set && !set.access.unrestricted && !set.access.allows(mapped.upstreamName, ex.verified?.claims);
    const finish = (): Response | undefined => {
      if (!denied) {
        const verdict = catalog.check(caller, mapped);
        if (verdict.kind === "invalid") {
          if (verdict.enforced) return refuse(invalidArguments(name, verdict.errors), "invalid_refused");
          observed?.call(upstream, "invalid_warned");
          log.warn("invalid tool arguments passed (validateArguments: warn)", {
            upstream,
            tool: mapped.upstreamName,
            path: verdict.errors[0]?.path,
            error: verdict.errors[0]?.message,
          });
        } else if (verdict.kind === "unusable") {
          observed?.call(upstream, "unvalidated");
          reportUnusable(log, catalog, upstream, mapped.upstreamName, verdict.why);
        }
      }
      if (mapped.upstreamName !== name || mapped.args !== args)
        rewrite(ex, message, { ...params, name: mapped.upstreamName, arguments: mapped.args }, mapped.upstreamName);
      return undefined;
    };
    const caller = callerOf(deps.callers, ex);
    const dispatch = deps.catalogDispatch;
    // A tool this caller has not listed: the gateway lists its tools first (once for its concurrent calls).
    if (!denied && dispatch && catalog.needsListing(caller, mapped.upstreamName)) {
      const signal = AbortSignal.any([ex.controller().signal, AbortSignal.timeout(listTimeoutMs)]);
      return catalog.listFor(caller, () => listOnBehalf(ex, dispatch, path, signal)).then(finish);
    }
    return finish();
  };

  const prompt = (ex: Exchange, catalog: RouteCatalog, id: JsonRpcId, message: JsonObject): Response | undefined => {
    const params = isRecord(message.params) ? message.params : {};
    const name = typeof params.name === "string" ? params.name : "";
    const original = catalog.overrides.upstreamPrompt(name);
    if (original === undefined) return faultResponse(id, unknownPrompt(name));
    if (original !== name) rewrite(ex, message, { ...params, name: original }, original);
    return undefined;
  };

  return step("catalog", (ex) => {
    const catalog = ex.set?.catalog;
    if (!catalog || catalog.inert || ex.method !== "POST") return undefined;
    const parsed = ex.post?.parsed;
    if (!parsed) return undefined;
    const message = parsed.message;
    if (Array.isArray(message)) {
      // A legacy batch (2025-03-26) is refused whole when it holds what the catalog changes, as access rules do.
      const guarded = message.some((m) => isRecord(m) && typeof m.method === "string" && GUARDED.has(m.method));
      return guarded ? faultResponse(null, catalogBatch()) : undefined;
    }
    if (!isRecord(message) || !("id" in message)) return undefined;
    // A modern request the classify step rejected is answered as such by the route.
    if (ex.cls?.era === "modern" && !("message" in ex.cls)) return undefined;
    const id = parsed.id;
    switch (parsed.method) {
      case "tools/list": {
        if (!catalog.editsToolLists) return undefined;
        const caller = callerOf(deps.callers, ex);
        ex.answerEdit = (result) => catalog.viewToolList(caller, result);
        return undefined;
      }
      case "prompts/list":
        if (!catalog.overrides.emptyPrompts) ex.answerEdit = (result) => catalog.viewPromptList(result);
        return undefined;
      case "tools/call":
        return catalog.overrides.emptyTools && catalog.mode === "off" ? undefined : call(ex, catalog, id, message);
      case "prompts/get":
        return catalog.overrides.emptyPrompts ? undefined : prompt(ex, catalog, id, message);
      default:
        return undefined;
    }
  });
}

/** The access step's edit and the catalog's: the upstream's list is filtered by access first, then shown. */
export function thenEdit(first: ResultEdit | undefined, then: ResultEdit | undefined): ResultEdit | undefined {
  if (!first) return then;
  if (!then) return first;
  return (result) => then(first(result));
}
