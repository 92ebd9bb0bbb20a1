// The routing hook for 2025-11-25 tasks (tasks-2025/) on the legacy
// pass-through. Everything not about tasks goes to the proxy as before, with
// the same answer edit (access rules); the hot path pays one method switch.
//   initialize declaring capabilities.tasks → relayed with the tasks capability added
//     (unless the upstream declares tasks itself: then the session is never touched);
//   tools/list on such a session            → execution.taskSupport from the policy;
//   tools/call with params.task             → a task of the gateway's (CreateTaskResult);
//   tasks/get|result|list|cancel            → the gateway's tasks (others pass through);
//   a response to a relayed input request   → the task's call upstream.
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import { LEGACY_VERSION } from "../protocol/era-translate.js";
import { noIdentity, taskAugmentationForbidden, taskAugmentationRequired } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { LegacyTasks, type LegacyTasksOptions } from "../tasks-2025/service.js";
import type { Caller } from "../calls/caller.js";
import {
  declaresTasks,
  LEGACY_TASK_METHODS,
  parseRelayId,
  taskSupportEdit,
  withTasksCapability,
} from "../tasks-2025/wire.js";
import type { Callers } from "../policy/sets/identity.js";
import type { PolicySet } from "../policy/sets/policy-set.js";
import type { Exchange } from "../server/exchange.js";
import { identify } from "../server/identify.js";

export interface LegacyTaskRouteDeps extends Omit<LegacyTasksOptions, "track"> {
  /** Who is calling (shared by every route, with its digest cache). */
  callers: Callers;
  proxy: (ex: Exchange, edit?: ResultEdit) => Promise<Response>;
  /** Registers a long wait for graceful shutdown; returns its release. */
  track: (stop: () => void) => () => void;
}

function compose(first: ResultEdit | undefined, then: ResultEdit): ResultEdit {
  return first ? (result) => then(first(result)) : then;
}

export function createLegacyTaskRoute(deps: LegacyTaskRouteDeps) {
  const { proxy } = deps;
  const tasks = new LegacyTasks({ ...deps, track: deps.track });
  const { callers } = deps;

  /**
   * The caller, as every route identifies it. `signal`: the client's, where its leaving matters (a tasks/result
   * that waits); else one that never fires, so no other request pays for watching its client.
   */
  const callerOf = (ex: Exchange, signal?: AbortSignal): Caller =>
    identify(callers, ex, signal ?? new AbortController().signal);

  const initialize = async (ex: Exchange, edit: ResultEdit | undefined, params: JsonObject): Promise<Response> => {
    let outcome: "added" | "upstream" | undefined;
    const addTasks: ResultEdit = (result) => {
      if (declaresTasks(result)) {
        // The upstream serves 2025-11-25 tasks itself: the session is its own, untouched.
        outcome = "upstream";
        return result;
      }
      outcome = "added";
      return withTasksCapability(result);
    };
    const res = await proxy(ex, compose(edit, addTasks));
    if (outcome === "added" && res.status === 200) {
      const sessionId = res.headers.get("mcp-session-id") ?? undefined;
      const capabilities = isRecord(params.capabilities) ? params.capabilities : {};
      // Recorded as this process's before the client learns the id: its next request may reach any replica.
      await tasks.sessions.open(sessionId, callerOf(ex).caller, capabilities);
    }
    return res;
  };

  return async (ex: Exchange, edit: ResultEdit | undefined): Promise<Response> => {
    const parsed = ex.post?.parsed;
    const set: PolicySet | undefined = ex.set;
    if (!parsed || !isRecord(parsed.message) || !set) return proxy(ex, edit);
    const method = parsed.method;
    const message = parsed.message;
    const params = isRecord(message.params) ? message.params : {};
    switch (method) {
      case "initialize":
        if (declaresTasks(params)) return initialize(ex, edit, params);
        break;
      case "tools/list": {
        const sessionId = ex.header("mcp-session-id");
        if (!tasks.sessions.has(sessionId)) break;
        const { caller, claims } = callerOf(ex);
        if (!tasks.sessions.get(sessionId, caller)) break;
        // Marked by the upstream's own names, which task rules use, before access rules and the catalog edit them.
        const support = taskSupportEdit((tool) => set.tasks.decide(tool, claims).mode);
        return proxy(ex, edit ? (result) => edit(support(result)) : support);
      }
      case "tools/call": {
        const sessionId = ex.header("mcp-session-id");
        if (!tasks.sessions.has(sessionId)) break;
        const who = callerOf(ex);
        const state = tasks.sessions.get(sessionId, who.caller);
        if (!state) break;
        const tool = typeof params.name === "string" ? params.name : "";
        const decision = set.tasks.decide(tool, who.claims);
        const augmented = isRecord(params.task);
        if (!augmented) {
          // The tools/list this session saw said "required": the call must come as a task.
          if (decision.mode === "required") return faultResponse(parsed.id, taskAugmentationRequired(tool));
          break;
        }
        if (decision.mode === "never") return faultResponse(parsed.id, taskAugmentationForbidden(tool));
        // Without it every such caller would share one identity, and so each other's tasks.
        if (set.identityHeader && !ex.header(set.identityHeader))
          return faultResponse(parsed.id, noIdentity(set.identityHeader));
        const protocolVersion = ex.header("mcp-protocol-version") ?? LEGACY_VERSION;
        return tasks.callAsTask(parsed.id, params, who, { sessionId, protocolVersion }, state, decision, tool);
      }
      case undefined:
        // A client's response: to an input request a task relayed, or the upstream's own.
        if (
          !("method" in message) &&
          ("result" in message || "error" in message) &&
          parseRelayId(parsed.id) !== undefined
        ) {
          const answered = await tasks.answer(message, callerOf(ex));
          if (answered) return answered;
        }
        break;
      default:
        if (LEGACY_TASK_METHODS.has(method)) {
          const sessionId = ex.header("mcp-session-id");
          const signal = method === "tasks/result" ? ex.controller().signal : undefined;
          const who = callerOf(ex, signal);
          const state = tasks.sessions.has(sessionId) ? tasks.sessions.get(sessionId, who.caller) : undefined;
          const served = await tasks.serve(method, parsed.id, params, who, state);
          if (served) return served;
        }
    }
    return proxy(ex, edit);
  };
}
