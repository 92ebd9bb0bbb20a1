// The pinned-definition fields of a named upstream (upstreams.<name>.pinning, .pins, .pinningListMaxAgeMs): kept
// here so schema.ts only spreads them in. What they do: docs/pinning.md.
import { z } from "zod";

/** A pinned digest as the gateway prints it: `sha256:` and 64 lowercase hex digits. */
const PIN_DIGEST = /^sha256:[0-9a-f]{64}$/;

const PINNING_POLICIES = ["allow", "warn", "hide"] as const;
export type PinningPolicy = (typeof PINNING_POLICIES)[number];

export const pinningFields = {
  pinning: z
    .enum(PINNING_POLICIES)
    .optional()
    .describe(
      "Pinned tool definitions: what the gateway does when a tool's definition (name, description, schemas, annotations) differs from the one approved, or a tool is new. allow: serve it and approve it (recorded, counted). warn: serve it, log it and count it; it stays pending. hide: drop it from tools/list and refuse calls to it (-32602, tool_changed) until approved (mcp-task-gateway pins approve, or pins). Absent: no pinning. See docs/pinning.md.",
    ),
  pins: z
    .record(z.string().min(1), z.string().regex(PIN_DIGEST, "must be sha256: and 64 lowercase hex digits"))
    .optional()
    .describe(
      "Approved definitions by tool name (the upstream's own name) → digest, as mcp-task-gateway pins list prints it. They take precedence over approvals in the store.",
    ),
  pinningListMaxAgeMs: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Under pinning hide, how old the gateway's view of the upstream's tools may be when a call comes: an older one is listed again, as the caller, before the call goes on. 0: listed before every call (concurrent calls share one listing).",
    ),
};
