// Regenerates config/gateway.schema.json and gateway.config.example.json from the zod schema.
// Run after changing src/config/schema.ts: npm run schema
import { writeFileSync } from "node:fs";
import { configJsonSchema, exampleConfig, toFileText } from "../src/config/json-schema.js";

const root = new URL("../", import.meta.url);
writeFileSync(new URL("config/gateway.schema.json", root), toFileText(configJsonSchema()));
writeFileSync(new URL("gateway.config.example.json", root), toFileText(exampleConfig()));
process.stdout.write("wrote config/gateway.schema.json and gateway.config.example.json\n");
