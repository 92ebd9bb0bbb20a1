// Tool access rules on the legacy (≤ 2025-11-25) pass-through. The rest of a
// legacy POST goes through byte for byte; only what access concerns is looked
// at: a tools/call of a denied tool is answered here and never reaches the
// upstream, and a tools/list answer is filtered. A JSON-RPC batch (2025-03-26)
// that holds either is refused whole: checking it call by call would mean
// splitting it, and batches left the protocol in 2025-06-18.
import type { ResultEdit } from "../protocol/answer-edit.js";
import { accessDenied, accessDeniedBatch, type Fault } from "../protocol/errors.js";
import { isRecord } from "../protocol/json.js";
import type { ParsedBody } from "../protocol/jsonrpc.js";
import type { AccessPolicy } from "../policy/access.js";
import type { Claims } from "../policy/claims.js";

export type LegacyVerdict =
  { kind: "pass" } | { kind: "filter"; edit: ResultEdit } | { kind: "deny"; tool: string; fault: Fault };

const GUARDED = new Set(["tools/call", "tools/list"]);

export function legacyAccess(
  parsed: Extract<ParsedBody, { ok: true }>,
  access: AccessPolicy,
  claims: Claims | undefined,
): LegacyVerdict {
  const { message } = parsed;
  if (Array.isArray(message)) {
    if (!message.some((m) => isRecord(m) && typeof m.method === "string" && GUARDED.has(m.method)))
      return { kind: "pass" };
    return { kind: "deny", tool: "(batch)", fault: accessDeniedBatch() };
  }
  if (parsed.method === "tools/list") {
    const edit = access.toolsListEdit(claims);
    return edit ? { kind: "filter", edit } : { kind: "pass" };
  }
  if (parsed.method !== "tools/call" || !isRecord(message)) return { kind: "pass" };
  const params = message.params;
  const tool = isRecord(params) && typeof params.name === "string" ? params.name : "";
  return access.allows(tool, claims) ? { kind: "pass" } : { kind: "deny", tool, fault: accessDenied(tool) };
}
