// The pinning step (docs/pinning.md): where upstreams.<name>.pinning applies, a tools/list answer goes through the
// pin registry's check on the upstream's own definitions (an edit run before access's, on the raw result), and
// under hide a tools/call goes on only to a tool whose definition, as the upstream lists it now, is approved.
// The gateway lists the upstream's tools itself, as the caller, when it must know them: on first use (to pin the
// whole listing) and, under hide, before a call when its last listing is older than pinningListMaxAgeMs. Both
// eras, every route: a federated endpoint's member requests come through their member's named route.
import type { PinRegistry } from "../catalog/pin-registry.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import { pinnedBatch, storeUnavailable, toolChanged, unsupportedMediaType, upstreamFault } from "../protocol/errors.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import type { Callers } from "../policy/sets/identity.js";
import { faultResponse } from "../web/json-response.js";
import type { Exchange } from "./exchange.js";
import { callerOf, whoOf } from "./identify.js";
import { step, type Step } from "./pipeline.js";

/** Every tool the upstream lists now (all pages), asked as the request's caller. */
export type ToolLister = (ex: Exchange) => Promise<unknown[]>;

export interface PinningStepDeps {
  pins: PinRegistry;
  callers: Callers;
  audit: AuditLog;
  log: Logger;
}

/** The request's method, id and tool (for a call), from either era's parsed message; undefined for the rest. */
function requestOf(ex: Exchange): { method: string; id: JsonRpcId; tool: string } | undefined {
  const cls = ex.cls;
  let message: unknown;
  if (cls?.era === "modern") {
    if (!("message" in cls) || cls.message.kind !== "request") return undefined;
    message = { method: cls.message.method, id: cls.message.id, params: cls.message.params };
  } else message = ex.post?.parsed?.message;
  if (!isRecord(message) || (message.method !== "tools/list" && message.method !== "tools/call")) return undefined;
  const params = isRecord(message.params) ? message.params : {};
  const id = message.id as JsonRpcId;
  return { method: message.method, id, tool: typeof params.name === "string" ? params.name : "" };
}

/** The pinning check before an edit that was already there (access's): pins see the upstream's own definitions. */
function before(pins: PinRegistry, upstream: string, then: ResultEdit | undefined): ResultEdit {
  return (result: JsonObject): JsonObject => {
    let out = result;
    if (Array.isArray(result.tools)) {
      const { served } = pins.checkList(upstream, result.tools);
      if (served.length !== result.tools.length) out = { ...result, tools: served };
    }
    return then ? then(out) : out;
  };
}

export function pinningStep(deps: PinningStepDeps, upstream: string, listTools: ToolLister): Step {
  const { pins } = deps;
  // One listing at a time per caller: concurrent calls of one caller share it.
  const listing = new Map<string, Promise<unknown[]>>();
  const listAs = (ex: Exchange): Promise<unknown[]> => {
    const key = callerOf(deps.callers, ex);
    let running = listing.get(key);
    if (!running) {
      running = listTools(ex).finally(() => listing.delete(key));
      listing.set(key, running);
    }
    return running;
  };

  const check = async (
    ex: Exchange,
    req: { method: string; id: JsonRpcId; tool: string },
  ): Promise<Response | undefined> => {
    const settings = pins.settings(upstream);
    if (!settings) return undefined;
    try {
      await pins.refresh(upstream);
    } catch (err) {
      deps.log.warn("pinned definitions could not be read", { upstream, cause: (err as Error).message });
      // Fail closed under hide: nothing says what is approved. Otherwise the answer is served unchecked.
      if (settings.policy === "hide") return faultResponse(req.id, storeUnavailable());
      return undefined;
    }
    const hide = settings.policy === "hide";
    if (pins.needsSeed(upstream) || (req.method === "tools/call" && pins.needsListing(upstream))) {
      let tools: unknown[];
      try {
        tools = await listAs(ex);
        if (pins.needsSeed(upstream)) await pins.seed(upstream, tools);
      } catch (err) {
        deps.log.warn("the upstream's tools could not be listed for pinning", {
          upstream,
          cause: (err as Error).message,
        });
        if (!hide) return undefined;
        // Fail closed: a call whose definition cannot be checked does not go on.
        return faultResponse(req.id, upstreamFault(err, upstream));
      }
      pins.listedWhole(upstream, tools);
    }
    if (req.method === "tools/list") {
      ex.answerEdit = before(pins, upstream, ex.answerEdit);
      return undefined;
    }
    const verdict = pins.callAllowed(upstream, req.tool);
    if (verdict.ok) return undefined;
    deps.audit.toolRefused(whoOf(deps.callers, ex), upstream, req.tool, verdict.digest);
    return faultResponse(req.id, toolChanged(req.tool, verdict.digest));
  };

  return step("pinning", (ex) => {
    if (ex.method !== "POST" || !ex.set) return undefined;
    const settings = pins.settings(upstream);
    if (!settings) return undefined;
    // Fail closed, as under access rules: a body the gateway did not parse could be a call it cannot check.
    if (!ex.post?.parsed && settings.policy === "hide")
      return faultResponse(null, unsupportedMediaType(ex.header("content-type")));
    // A legacy batch (2025-03-26) is refused whole, as under access rules: checking it would mean splitting it.
    const message = ex.cls?.era === "modern" ? undefined : ex.post?.parsed?.message;
    if (
      Array.isArray(message) &&
      message.some((m) => isRecord(m) && (m.method === "tools/call" || m.method === "tools/list"))
    )
      return faultResponse(null, pinnedBatch());
    const req = requestOf(ex);
    return req ? check(ex, req) : undefined;
  });
}
