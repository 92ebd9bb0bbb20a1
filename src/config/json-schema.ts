// Derives the committed artifacts from the zod schema, so they cannot drift:
// config/gateway.schema.json and gateway.config.example.json. A unit test fails
// when the committed files differ from what these functions produce.
import { z } from "zod";
import { gatewayConfigSchema, UPSTREAM_NAME } from "./schema.js";
import { parseConfig } from "./validate.js";

export const EXAMPLE_UPSTREAM = "http://127.0.0.1:3001/mcp";

export function configJsonSchema(): Record<string, unknown> {
  // "input" describes what a user writes: fields with defaults are optional.
  const schema = z.toJSONSchema(gatewayConfigSchema, { io: "input", target: "draft-2020-12" });
  // The schema's refinement (exactly one of upstream.url and upstream.command), which zod cannot export.
  const upstream = (schema.properties as Record<string, Record<string, unknown>> | undefined)?.upstream;
  if (upstream) upstream.oneOf = [{ required: ["url"] }, { required: ["command"] }];
  // And the root's: an upstream, or at least one named one (zod cannot export that either).
  schema.anyOf = [
    { required: ["upstream"] },
    { required: ["upstreams"], properties: { upstreams: { minProperties: 1 } } },
  ];
  const upstreams = (schema.properties as Record<string, Record<string, unknown>> | undefined)?.upstreams;
  if (upstreams) upstreams.propertyNames = { pattern: UPSTREAM_NAME.source };
  const named = upstreams?.additionalProperties as Record<string, unknown> | undefined;
  if (named) named.oneOf = [{ required: ["url"] }, { required: ["command"] }];
  return { ...schema, title: "mcp-task-gateway configuration" };
}

/** Every field with its default, pointing at the schema for editor completion. */
export function exampleConfig(): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = parseConfig({ upstream: { url: EXAMPLE_UPSTREAM } });
  return { $schema: "./config/gateway.schema.json", ...rest };
}

export function toFileText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
