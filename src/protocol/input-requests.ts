// Maps a legacy server→client request (sent on an SSE stream) onto a modern MRTR
// input request, but only if the modern request declared the capability it
// needs: the gateway never asks a client for something it did not offer.
import { isRecord, type JsonObject } from "./json.js";

/** An input request the upstream sent and the client has not answered yet. */
export interface PendingInput {
  upstreamRequestId: string | number;
  request: JsonObject;
}

export type InputRequestMapping = { kind: "ok"; request: JsonObject } | { kind: "unsupported"; reason: string };

function declared(caps: JsonObject, name: string): JsonObject | undefined {
  const v = caps[name];
  return isRecord(v) ? v : undefined;
}

export function inputRequestFor(message: JsonObject, caps: JsonObject): InputRequestMapping {
  const method = message.method;
  const params = isRecord(message.params) ? message.params : {};
  switch (method) {
    case "elicitation/create": {
      const elicitation = declared(caps, "elicitation");
      const url = params.mode === "url";
      // An empty elicitation capability means form mode (2025-11-25 and 2026-07-28 agree).
      const allowed =
        elicitation !== undefined &&
        (url ? isRecord(elicitation.url) : Object.keys(elicitation).length === 0 || isRecord(elicitation.form));
      if (!allowed)
        return { kind: "unsupported", reason: `the client did not declare elicitation${url ? ".url" : ""}` };
      // elicitationId and the completion notification do not exist in 2026-07-28.
      const { elicitationId: _id, ...rest } = params;
      return { kind: "ok", request: { method, params: rest } };
    }
    case "sampling/createMessage": {
      const sampling = declared(caps, "sampling");
      if (!sampling) return { kind: "unsupported", reason: "the client did not declare sampling" };
      if ((params.tools !== undefined || params.toolChoice !== undefined) && !isRecord(sampling.tools)) {
        return { kind: "unsupported", reason: "the client did not declare sampling.tools" };
      }
      return { kind: "ok", request: { method, params } };
    }
    case "roots/list":
      if (!declared(caps, "roots")) return { kind: "unsupported", reason: "the client did not declare roots" };
      return { kind: "ok", request: { method } };
    default:
      return { kind: "unsupported", reason: `the gateway cannot relay ${String(method)} to a modern client` };
  }
}
