// Turns zod's issues into one message per field, so a bad config or flag names
// exactly which field is wrong and why (the CLI exits 2 with this text).
import type { z } from "zod";
import { gatewayConfigSchema, type GatewayConfig } from "./schema.js";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly code = "ERR_GATEWAY_CONFIG";
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
  }
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
  if (issue.code === "unrecognized_keys") {
    return `${field === "(root)" ? "" : `${field}: `}unknown field(s) ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
  }
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) {
    return `${field}: is required`;
  }
  return `${field}: ${issue.message}`;
}

/** Validates raw input and fills defaults; throws ConfigError naming each bad field. */
export function parseConfig(input: unknown): GatewayConfig {
  // A missing `upstream` section is reported as its one required field, upstream.url.
  const withUpstream =
    typeof input === "object" && input !== null && !Array.isArray(input) && !("upstream" in input)
      ? { ...input, upstream: {} }
      : input;
  const result = gatewayConfigSchema.safeParse(withUpstream);
  if (!result.success) throw new ConfigError(result.error.issues.map(describeIssue));
  return result.data;
}
