// `mcp-task-gateway pins list|approve` (docs/pinning.md): reads the pinned definitions' pending changes from the
// store the config names (tasks.store, tasks.storePrefix) and approves them. An approval is one write to the
// shared store; every replica sees the pins' version move on its next tools/list or tools/call of that upstream,
// and serves the approved definition from then on, without a restart.
import { parseArgs } from "node:util";
import { pendingViews, type PendingView } from "./catalog/pin-registry.js";
import { CONFIG_ENV, loadConfig } from "./config/load.js";
import type { GatewayConfig } from "./config/schema.js";
import { ConfigError } from "./config/validate.js";
import { createAuditLog } from "./log/audit.js";
import { createLogger } from "./log/logger.js";
import { closeRedis, connectRedis } from "./store/redis-connect.js";
import { RedisPinStore } from "./store/redis-pins.js";
import { parseStoreSpec } from "./store/store-url.js";

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

const PINS_USAGE = [
  "usage: mcp-task-gateway pins list [--config FILE] [--upstream NAME] [--json]",
  "       mcp-task-gateway pins approve [--config FILE] [--upstream NAME] (TOOL… | --all)",
].join("\n");

/**
 * What an upstream wrote (tool names, descriptions, schema keys), made safe for an operator's terminal: control
 * characters (an escape sequence could rewrite the screen or the window title) are shown as \xNN.
 */
function printable(text: string): string {
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

function line(upstream: string, p: PendingView): string {
  const parts = [
    `${upstream}\t${printable(p.tool)}\t${p.kind}\t${p.digest}`,
    ...(p.approved === undefined ? [] : [`  approved: ${p.approved}`]),
    `  fields: ${p.diff.fields.map(printable).join(", ") || "(none)"}`,
    ...(p.diff.description === undefined ? [] : [`  description: ${printable(p.diff.description)}`]),
    ...(p.diff.schema === undefined ? [] : [`  schema: ${p.diff.schema.map(printable).join(" ")}`]),
  ];
  return `${parts.join("\n")}\n`;
}

/** The upstreams the command looks at: the one asked for, else every upstream with pinning in the config. */
function upstreamsOf(config: GatewayConfig, asked: string | undefined): string[] {
  if (asked !== undefined) return [asked];
  return Object.entries(config.upstreams)
    .filter(([, block]) => block.pinning !== undefined)
    .map(([name]) => name);
}

/**
 * The `pins` subcommand's arguments when argv names it (first, or after --config FILE / --config=FILE), else
 * undefined: `mcp-task-gateway --config gateway.yaml pins list` works as `pins list --config gateway.yaml`.
 */
export function pinsArgv(argv: readonly string[]): string[] | undefined {
  const lead: string[] = [];
  let i = 0;
  while (i < argv.length && argv[i]?.startsWith("--config")) {
    const take = argv[i] === "--config" ? 2 : 1;
    lead.push(...argv.slice(i, i + take));
    i += take;
  }
  return argv[i] === "pins" ? [...argv.slice(i + 1), ...lead] : undefined;
}

export async function runPinsCommand(argv: readonly string[], io: Io): Promise<number> {
  const [action, ...rest] = argv;
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: {
        config: { type: "string" },
        upstream: { type: "string" },
        all: { type: "boolean" },
        json: { type: "boolean" },
      },
      strict: true,
      allowPositionals: true,
    }));
  } catch (err) {
    io.stderr(`mcp-task-gateway pins: ${(err as Error).message}\n${PINS_USAGE}\n`);
    return EXIT_USAGE;
  }
  if ((action !== "list" && action !== "approve") || (action === "list" && positionals.length > 0)) {
    io.stderr(`${PINS_USAGE}\n`);
    return EXIT_USAGE;
  }
  if (action === "approve" && (positionals.length === 0) === (values.all !== true)) {
    io.stderr(`mcp-task-gateway pins approve: name the tools to approve, or --all (not both)\n${PINS_USAGE}\n`);
    return EXIT_USAGE;
  }
  const configFile = typeof values.config === "string" ? values.config : io.env[CONFIG_ENV] || undefined;
  let config: GatewayConfig;
  try {
    config = await loadConfig({ flags: {}, env: io.env, configFile });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(`mcp-task-gateway pins: the config is not valid (run --check): ${err.message}\n`);
      return EXIT_USAGE;
    }
    throw err;
  }
  const asked = typeof values.upstream === "string" ? values.upstream : undefined;
  if (asked !== undefined && config.upstreams[asked]?.pinning === undefined) {
    io.stderr(`mcp-task-gateway pins: upstreams.${asked} has no pinning in this config\n`);
    return EXIT_USAGE;
  }
  const spec = parseStoreSpec(config.tasks.store);
  if (spec.kind !== "redis") {
    io.stderr(
      "mcp-task-gateway pins: tasks.store is memory: each gateway keeps its pins in its own process; approve a definition by listing it in upstreams.<name>.pins\n",
    );
    return EXIT_USAGE;
  }
  let client;
  try {
    client = await connectRedis(spec, { connectionName: "mcp-task-gateway-pins", tls: config.tasks.redisTls });
  } catch (err) {
    io.stderr(`mcp-task-gateway pins: the store ${spec.display} cannot be reached: ${(err as Error).message}\n`);
    return EXIT_FAILED;
  }
  try {
    const store = new RedisPinStore(client, config.tasks.storePrefix);
    const upstreams = upstreamsOf(config, asked);
    const pending = new Map<string, PendingView[]>();
    for (const upstream of upstreams)
      pending.set(upstream, pendingViews(await store.load(upstream), config.upstreams[upstream]?.pins ?? {}));
    if (action === "list") {
      if (values.json === true) io.stdout(`${JSON.stringify(Object.fromEntries(pending), null, 2)}\n`);
      else {
        const lines = [...pending].flatMap(([u, views]) => views.map((p) => line(u, p)));
        io.stdout(lines.length > 0 ? lines.join("") : "no pending changes\n");
      }
      return EXIT_OK;
    }
    // approve
    const audit = createAuditLog(createLogger(config.log.level, (l) => io.stderr(l)));
    const wanted = new Set(positionals);
    let failed = false;
    for (const [upstream, views] of pending) {
      const snapshot = await store.load(upstream);
      for (const view of views) {
        if (values.all !== true && !wanted.has(view.tool)) continue;
        wanted.delete(view.tool);
        const record = snapshot.pending.get(view.tool);
        if (!record) continue;
        if (config.upstreams[upstream]?.pins?.[view.tool] !== undefined)
          io.stderr(
            `mcp-task-gateway pins: upstreams.${upstream}.pins.${printable(view.tool)} in the config takes precedence\n`,
          );
        if (await store.approve(upstream, view.tool, { ...record, at: Date.now(), note: "cli" })) {
          audit.toolApproved(upstream, view.tool, record.digest, "cli");
          io.stdout(`approved ${upstream} ${printable(view.tool)} ${record.digest}\n`);
        } else {
          io.stderr(`mcp-task-gateway pins: ${upstream} ${printable(view.tool)}: too many pins kept already\n`);
          failed = true;
        }
      }
    }
    for (const tool of wanted) {
      io.stderr(`mcp-task-gateway pins: no pending change for ${printable(tool)}\n`);
      failed = true;
    }
    return failed ? EXIT_FAILED : EXIT_OK;
  } finally {
    await closeRedis(client);
  }
}
