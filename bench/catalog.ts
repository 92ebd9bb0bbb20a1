// The catalog's added cost (issue 36), in process, on the code as it runs (tsx): per tools/call, mapping a call
// (rename, pin, defaults), validating its arguments against a cached compiled schema, and re-encoding the rewritten
// request; per tools/list, learning and overriding a page of tools. Also the one-off compile of a schema.
//
//   npm run bench -- catalog [--tools 50] [--iterations 200000]   (the guarded figures: bench/lib/micro-paths.ts)
import { performance } from "node:perf_hooks";
import { RouteCatalog } from "../src/catalog/route-catalog.js";
import { ValidatorCache } from "../src/catalog/validator.js";
import { githubTool, overridesFor } from "./lib/micro-paths.js";

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const TOOLS = arg("tools", 50);
const N = arg("iterations", 200_000);

const page = { tools: Array.from({ length: TOOLS }, (_, i) => githubTool(i)) };
const overrides = overridesFor(TOOLS);

function time(label: string, n: number, body: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(n, 10_000); i++) body(i);
  const start = performance.now();
  let sink = 0;
  for (let i = 0; i < n; i++) if (body(i) !== undefined) sink++;
  const perOp = ((performance.now() - start) * 1e6) / n;
  process.stdout.write(
    `${label.padEnd(58)} ${perOp.toFixed(0).padStart(8)} ns/op  (${n} ops, ${sink > 0 ? "ok" : "-"})\n`,
  );
  return perOp;
}

const enforce = new RouteCatalog(overrides, undefined, "enforce");
const bare = new RouteCatalog(undefined, undefined, "enforce");
const off = new RouteCatalog(overrides, undefined, "off");
enforce.viewToolList("caller", page);
bare.viewToolList("caller", page);
const args = { repo: "gateway", title: "A bug", labels: ["bug"], page: { n: 2 } };
const message = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "renamed_3", arguments: args } };

process.stdout.write(`node ${process.version}, ${TOOLS} tools per list\n\nper tools/call\n`);
time("mapCall (rename, pin, default)", N, () => off.mapCall("renamed_3", args));
time("mapCall + check (validateArguments: enforce, cached)", N, () => {
  const m = enforce.mapCall("renamed_3", args);
  return "reason" in m ? undefined : enforce.check("caller", m);
});
time("check only, no overrides (validateArguments: enforce)", N, () => {
  const m = bare.mapCall("tool_3", { owner: "acme", ...args });
  return "reason" in m ? undefined : bare.check("caller", m);
});
time("re-encoding the rewritten request (JSON.stringify + Buffer)", N, () =>
  Buffer.from(JSON.stringify({ ...message, params: { ...message.params, name: "tool_3" } })),
);

process.stdout.write(`\nper tools/list page of ${TOOLS} tools\n`);
time("viewToolList: overrides only (validateArguments: off)", N / 100, () => off.viewToolList("caller", page));
time("viewToolList: overrides + learning (enforce)", N / 100, (i) => enforce.viewToolList(`c${i % 100}`, page));
time("JSON.parse + JSON.stringify of the page (the edit's read)", N / 100, () => JSON.parse(JSON.stringify(page)));

process.stdout.write(`\none-off\n`);
let k = 0;
const cold = new ValidatorCache(100_000);
time("first validation of a new schema (digest + compile)", 2_000, () =>
  cold.validate({ ...(githubTool(0).inputSchema as object), maxProperties: 100 + k++ }, args),
);
