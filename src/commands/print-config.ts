// --print-config: the configuration a start would use (file, environment and flags merged, every default filled
// in), masked (mask-secrets.ts), as YAML with a header saying where it came from, or as JSON.
import { stringify } from "yaml";
import type { GatewayConfig } from "../config/schema.js";
import { maskSecrets } from "./mask-secrets.js";

export const PRINT_FORMATS = ["yaml", "json"] as const;
export type PrintFormat = (typeof PRINT_FORMATS)[number];

/** The effective config as text. `configFile`: the file it was read from, if any, for the header. */
export function renderConfig(config: GatewayConfig, format: PrintFormat, configFile: string | undefined): string {
  const masked = maskSecrets(config);
  if (format === "json") return `${JSON.stringify(masked, null, 2)}\n`;
  const sources =
    configFile === undefined ? "environment and flags (no config file)" : `${configFile}, environment and flags`;
  return [
    `# The effective configuration of mcp-task-gateway: ${sources}, with every default.`,
    "# Secrets are shown as *** (header and env values, tokens, keys, URL passwords and query strings):",
    "# this text is for reading, and is not a config to start from as it is.",
    stringify(masked, { lineWidth: 0 }),
  ].join("\n");
}
