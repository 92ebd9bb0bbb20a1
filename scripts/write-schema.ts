// Regenerates config/gateway.schema.json, gateway.config.example.json and docs/config-reference.md from the zod
// schema. Run after changing src/config/schema.ts: npm run schema
import { writeFileSync } from "node:fs";
import { configJsonSchema, exampleConfig, toFileText } from "../src/config/json-schema.js";
import { configReferenceMarkdown } from "../src/config/config-reference.js";

const root = new URL("../", import.meta.url);
writeFileSync(new URL("config/gateway.schema.json", root), toFileText(configJsonSchema()));
writeFileSync(new URL("gateway.config.example.json", root), toFileText(exampleConfig()));
writeFileSync(new URL("docs/config-reference.md", root), configReferenceMarkdown());
process.stdout.write("wrote config/gateway.schema.json, gateway.config.example.json and docs/config-reference.md\n");
