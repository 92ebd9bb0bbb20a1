// One zod schema is the single source of truth for the gateway's configuration:
// the TypeScript types, the runtime validation (with field-named errors), and the
// committed JSON Schema (config/gateway.schema.json) are all derived from it.
import { z } from "zod";

/** Default TCP port. 8642 is unassigned by IANA and unlikely to clash with dev servers. */
export const DEFAULT_PORT = 8642;

const port = z.number().int().min(0).max(65535);
const positiveMs = z.number().int().min(1);
const nonNegativeMs = z.number().int().min(0);

const httpUrl = z
  .string()
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  }, "must be an absolute http:// or https:// URL");

export const upstreamSchema = z
  .object({
    url: httpUrl.describe("The upstream MCP endpoint, e.g. https://mcp.example.com/mcp."),
    connections: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        "Maximum concurrent connections to the upstream; 0 means no gateway-side limit. Every in-flight request and every open event stream (GET streams, listens, running tasks) holds one, so a low limit lets long-lived streams starve everything else.",
      ),
    keepAliveTimeoutMs: positiveMs
      .default(4_000)
      .describe("How long an idle upstream keep-alive connection is kept open."),
    connectTimeoutMs: positiveMs
      .default(10_000)
      .describe("Time allowed to establish a TCP/TLS connection to the upstream (502 on expiry)."),
    headersTimeoutMs: positiveMs
      .default(300_000)
      .describe(
        "Time allowed for the upstream to send response headers (504 on expiry). SSE answers send headers at once; JSON answers only when the call ends.",
      ),
    controlTimeoutMs: positiveMs
      .default(10_000)
      .describe(
        "Deadline for the gateway's own short messages to the upstream: cancellations, answers to the upstream's input requests, resources/subscribe, session DELETE. They must not hang on an upstream that stopped answering.",
      ),
    era: z
      .enum(["auto", "legacy", "modern"])
      .default("auto")
      .describe(
        "Which MCP era the upstream speaks. auto probes server/discover once: an upstream that answers it is modern (2026-07-28), else legacy (≤ 2025-11-25).",
      ),
    idleTimeoutMs: nonNegativeMs
      .default(0)
      .describe(
        "Abort an upstream response body that sends nothing for this long. 0 disables it, because idle SSE streams are normal.",
      ),
  })
  .strict();

export const serverSchema = z
  .object({
    host: z
      .string()
      .min(1)
      .default("127.0.0.1")
      .describe("Interface to bind. Loopback by default; set 0.0.0.0 deliberately."),
    port: port.default(DEFAULT_PORT).describe("TCP port to listen on; 0 picks a free port."),
    path: z
      .string()
      .regex(/^\/[^\s?#]*$/, "must start with / and contain no spaces, ? or #")
      .default("/mcp")
      .describe("The MCP endpoint path served by the gateway."),
    maxBodyBytes: z
      .number()
      .int()
      .min(1)
      .default(4 * 1024 * 1024)
      .describe("Largest request body accepted from a client (413 beyond it)."),
    sseKeepAliveMs: nonNegativeMs
      .default(15_000)
      .describe(
        "Send an SSE comment on an idle event stream after this long, so load balancers keep it open. 0 disables it.",
      ),
    allowedOrigins: z
      .array(z.string().min(1))
      .default([])
      .describe(
        "Browser origins allowed to call the gateway besides loopback ones (e.g. https://app.example.com). Requests without an Origin header are always allowed.",
      ),
    allowLoopbackOrigins: z
      .boolean()
      .default(true)
      .describe("Allow Origin values on localhost, 127.0.0.0/8 and [::1]."),
    shutdownGraceMs: nonNegativeMs
      .default(10_000)
      .describe("On SIGINT/SIGTERM, how long in-flight requests get to finish before they are cut."),
    readyTimeoutMs: positiveMs
      .default(2_000)
      .describe("How long /readyz waits for the upstream before answering 503."),
    workers: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(1)
      .describe(
        "Processes serving this host's port (node:cluster). More than 1 needs a shared task store (tasks.store), so that every worker sees every task.",
      ),
    internalHost: z
      .string()
      .min(1)
      .default("127.0.0.1")
      .describe(
        "Interface for the internal listener a replica opens when tasks are shared: other replicas forward tasks/update, tasks/cancel and MRTR retries there, to the replica that runs the call. Loopback by default (workers of one host); set a reachable interface for replicas on several hosts.",
      ),
    internalPort: port.default(0).describe("Port of the internal listener; 0 picks a free one (it is registered in the store)."),
    advertiseUrl: httpUrl
      .optional()
      .describe("How other replicas reach this one's internal listener, e.g. http://10.0.0.5:8643. Default: http://internalHost:internalPort as bound."),
  })
  .strict();

export const modernSchema = z
  .object({
    cacheTtlMs: nonNegativeMs
      .default(0)
      .describe(
        "ttlMs stamped on list/read/discover results bridged from a legacy upstream (which cannot say how long they stay fresh). 0: clients re-fetch every time.",
      ),
    cacheScope: z
      .enum(["public", "private"])
      .default("private")
      .describe("cacheScope stamped on bridged list/read/discover results. private: results may depend on the caller's credentials."),
    sessionIdleMs: positiveMs
      .default(300_000)
      .describe("Close a legacy upstream session the gateway opened after it has been idle this long."),
    sessionOpenTimeoutMs: positiveMs
      .default(30_000)
      .describe(
        "Deadline for opening one legacy upstream session (initialize + initialized). Every caller waiting for that session shares it; each still stops waiting when it leaves.",
      ),
    maxSessions: z
      .number()
      .int()
      .min(1)
      .default(1_000)
      .describe("Most legacy upstream sessions open at once (one per distinct caller credentials and capabilities)."),
    inputRequestTtlMs: positiveMs
      .default(300_000)
      .describe("How long an upstream call waits for a client's MRTR retry (its input responses) before it is cancelled."),
    maxPendingInputs: z
      .number()
      .int()
      .min(1)
      .default(10_000)
      .describe("Most MRTR exchanges waiting for a retry, overall."),
    maxPendingInputsPerCaller: z
      .number()
      .int()
      .min(1)
      .default(100)
      .describe("Most MRTR exchanges waiting for a retry, per caller."),
    requestStateSecret: z
      .string()
      .min(32)
      .optional()
      .describe(
        "Key that signs MRTR requestState, at least 32 characters. Optional: by default each process draws one, and replicas sharing a store agree on one kept in the store, so no secret has to be copied between hosts.",
      ),
  })
  .strict();

export const taskRuleSchema = z
  .object({
    tool: z.string().min(1).describe("Glob over tool names: * matches any run of characters, ? one character."),
    mode: z
      .enum(["auto", "always", "never", "required"])
      .describe(
        "auto: a task only if the call runs past thresholdMs; always: a task at once; never: plain pass-through; required: a task, and clients that do not declare the extension get -32021.",
      ),
    thresholdMs: nonNegativeMs.optional().describe("Threshold for this rule (auto)."),
    ttlMs: positiveMs.optional().describe("Task TTL for this rule (capped by tasks.maxTtlMs)."),
    pollIntervalMs: positiveMs.optional().describe("Suggested poll interval for this rule."),
  })
  .strict();

export const tasksSchema = z
  .object({
    thresholdMs: nonNegativeMs
      .default(5_000)
      .describe(
        "Default latency threshold: a tools/call from a declaring client that runs longer becomes a task. 5 s is well under the 30–60 s at which clients and load balancers commonly give up, and above what interactive tools usually take.",
      ),
    rules: z
      .array(taskRuleSchema)
      .default([])
      .describe("Per-tool policy; the first rule whose glob matches the tool name applies. Unmatched tools use auto."),
    defaultTtlMs: positiveMs.default(3_600_000).describe("How long a task and its result are kept after creation (1 h)."),
    maxTtlMs: positiveMs.default(86_400_000).describe("Ceiling on any task TTL, rules included (24 h)."),
    pollIntervalMs: positiveMs.default(1_000).describe("Suggested interval between tasks/get polls."),
    maxTasksPerCaller: z
      .number()
      .int()
      .min(1)
      .default(100)
      .describe("Most unfinished (working or input_required) tasks one caller may have."),
    maxTasks: z.number().int().min(1).default(10_000).describe("Most unfinished tasks overall."),
    maxResultBytes: z
      .number()
      .int()
      .min(1)
      .default(8 * 1024 * 1024)
      .describe("Largest result (or error) a task may buffer; a larger one fails the task with a clear error."),
    storeBytes: z
      .number()
      .int()
      .min(1)
      .default(256 * 1024 * 1024)
      .describe(
        "Byte budget of the task store (all records with their results). Memory store: least recently used tasks go first. Redis store: counted over every replica, and new tasks are refused at the budget until expiry frees room.",
      ),
    store: z
      .string()
      .refine((v) => v === "memory" || /^rediss?:\/\//.test(v), "must be memory, or a redis:// or rediss:// URL")
      .default("memory")
      .describe(
        "Where tasks live: memory (one process; lost on restart), or a redis:// / rediss:// URL (a database number in the path selects it) shared by every replica and worker, so tasks outlive the process and any replica serves any task.",
      ),
    storePrefix: z
      .string()
      .min(1)
      .max(100)
      .default("mcp-gateway:")
      .describe("Prefix of every key the gateway writes in a shared store; replicas that share tasks use the same prefix."),
    leaseMs: z
      .number()
      .int()
      .min(1_000)
      .default(15_000)
      .describe(
        "With a shared store, the replica running a task holds a lease on it, renewed every leaseMs/3. A task whose lease lapses (its replica crashed or lost Redis) is ended failed. 15 s rides out a GC pause or a Redis failover of a few seconds, and still fails a dead replica's tasks well inside a client's poll budget.",
      ),
    sweepIntervalMs: positiveMs
      .default(5_000)
      .describe("How often a replica looks for unfinished tasks whose lease lapsed, so a task nobody polls still ends."),
    forwardTimeoutMs: positiveMs
      .default(10_000)
      .describe("How long a replica waits for the replica running a task to apply a forwarded tasks/update, tasks/cancel or MRTR retry before answering an error."),
    drainMs: nonNegativeMs
      .default(20_000)
      .describe(
        "On a graceful shutdown with a shared store, how long unfinished tasks get to finish before they are handed to another replica (resumable upstream streams) or cancelled and ended failed. Keep it under the orchestrator's grace period (30 s by default on Kubernetes).",
      ),
    identityHeader: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Request header that identifies the caller (e.g. set by an auth proxy). Default: a hash of the Authorization header.",
      ),
  })
  .strict()
  .refine((t) => t.maxResultBytes < t.storeBytes, { message: "maxResultBytes must be smaller than storeBytes", path: ["maxResultBytes"] })
  .refine((t) => t.defaultTtlMs <= t.maxTtlMs, { message: "defaultTtlMs must not exceed maxTtlMs", path: ["defaultTtlMs"] });

export const logSchema = z
  .object({
    level: z
      .enum(["silent", "error", "warn", "info", "debug"])
      .default("info")
      .describe("Log verbosity. Logs are JSON lines on stderr and never contain credentials."),
  })
  .strict();

export const gatewayConfigSchema = z
  .object({
    $schema: z.string().optional().describe("Path or URL of this file's JSON Schema."),
    upstream: upstreamSchema,
    server: serverSchema.prefault({}),
    modern: modernSchema.prefault({}),
    tasks: tasksSchema.prefault({}),
    log: logSchema.prefault({}),
  })
  .strict()
  .refine((c) => c.tasks.store === "memory" || c.server.advertiseUrl !== undefined || !["0.0.0.0", "::", "[::]"].includes(c.server.internalHost), {
    message: "an internal listener on every interface needs server.advertiseUrl: other replicas cannot reach 0.0.0.0",
    path: ["server", "advertiseUrl"],
  })
  .refine((c) => c.server.workers === 1 || c.tasks.store !== "memory", {
    message: "more than one worker needs a shared task store: set --store redis://HOST:PORT (tasks.store), so every worker sees every task",
    path: ["server", "workers"],
  });

/** A fully validated configuration with every default filled in. */
export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
/** What a caller may pass: only `upstream.url` is required. */
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;
export type LogLevel = GatewayConfig["log"]["level"];
