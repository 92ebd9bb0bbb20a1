// One zod schema is the single source of truth for the gateway's configuration:
// the TypeScript types, the runtime validation (with field-named errors), and the
// committed JSON Schema (config/gateway.schema.json) are all derived from it.
import { z } from "zod";
import { isLoopbackHost } from "../address/loopback.js";
import { globToRegExp } from "./glob.js";
import { oauthSchema, refineOAuth, vaultSchema } from "./oauth-schema.js";
import { federatedToolsSchema, promptsBlockSchema, toolsBlockSchema, validateArgumentsSchema } from "./catalog.js";
import { pinningFields } from "./pinning.js";

/** Default TCP port. 8642 is unassigned by IANA and unlikely to clash with dev servers. */
export const DEFAULT_PORT = 8642;

const port = z.number().int().min(0).max(65535);
const positiveMs = z.number().int().min(1);
const nonNegativeMs = z.number().int().min(0);

const httpUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}, "must be an absolute http:// or https:// URL");

function isHttps(url: string): boolean {
  try {
    return new URL(url).protocol === "https:";
  } catch {
    return false;
  }
}

/** Names in `upstreams`: a path segment (`<server.path>/<name>`) and a metric label value, so short and plain. */
export const UPSTREAM_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** What the single `upstream` is called in labels, /status and rule globs; `upstreams` may not also use it. */
export const DEFAULT_UPSTREAM_NAME = "default";

/** Header names static upstream headers must not set: the transport's and the connection's own. */
const TRANSPORT_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "content-type",
  "transfer-encoding",
  "keep-alive",
  "upgrade",
  "te",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
]);

const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "must be an HTTP header name");

// The value is never part of a message: it is often a credential.
const staticHeadersSchema = z
  .record(
    headerName.refine((h) => !TRANSPORT_HEADERS.has(h.toLowerCase()), "is set by the gateway or the MCP transport"),
    z.string().regex(/^[\t\x20-\x7e\x80-\xff]*$/, "must not contain control characters (CR, LF)"),
  )
  .default({})
  .describe(
    "Static headers sent with every request to this HTTP upstream, replacing a client's header of the same name: e.g. the upstream's own token (authorization: Bearer ${GITHUB_TOKEN}). In a config file, ${VAR} names an environment variable, expanded when the file is loaded ($${ for a literal ${); an unset variable is a config error. Values are never logged or shown.",
  );

/** Every field of an upstream block; refined by refineUpstream, whether it is `upstream` or an entry of `upstreams`. */
const upstreamFields = z.object({
  url: httpUrl
    .optional()
    .describe("The upstream MCP endpoint, e.g. https://mcp.example.com/mcp. Set this or upstream.command, not both."),
  command: z
    .array(z.string())
    .min(1)
    // Only the program must be named: an empty argument ('' on a command line) is a real argument.
    .refine((argv) => argv[0] !== "", "the program (the first element) must not be empty")
    .optional()
    .describe(
      'A stdio MCP server to run instead of an HTTP upstream: the program and its arguments (argv, never run through a shell), e.g. ["npx", "-y", "@modelcontextprotocol/server-everything"]. Each client session gets its own child process. Set this or upstream.url, not both. From the config only, never from a request.',
    ),
  env: z
    .record(z.string(), z.string())
    .default({})
    .describe(
      "Environment variables set for the stdio server (upstream.command), on top of the inherited ones (upstream.inheritEnv).",
    ),
  cwd: z
    .string()
    .min(1)
    .optional()
    .describe("Working directory of the stdio server (upstream.command). Default: the gateway's."),
  inheritEnv: z
    .array(z.string().min(1))
    .default(["PATH", "HOME"])
    .describe(
      "Names of the gateway's environment variables the stdio server inherits. Only PATH and HOME by default, so the gateway's own secrets never reach third-party code.",
    ),
  maxProcesses: z
    .number()
    .int()
    .min(1)
    .default(32)
    .describe(
      "Most stdio server processes alive at once (one per session); a new session beyond it is refused with 503.",
    ),
  maxProcessesPerCaller: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "Most stdio server processes one caller may hold at once, so one caller cannot take every process of upstream.maxProcesses; a new session beyond it is refused with 429 (too_many_processes_for_caller). Unset: a quarter of maxProcesses (at least 1) once auth.jwt verifies callers, else no share (callers are then only what their headers say, and new headers would be a new share).",
    ),
  warmProcesses: z
    .number()
    .int()
    .min(0)
    .max(64)
    .default(0)
    .describe(
      "stdio server processes kept started and ready (each has answered a ping) ahead of any session, so a new session starts in the time of one initialize instead of a spawn. Each still serves one session only and is replaced in the background once taken. Counted within upstream.maxProcesses; a session never waits for a slot they hold. 0 starts every process on demand.",
    ),
  processIdleMs: positiveMs
    .default(300_000)
    .describe(
      "End a stdio server process whose session has had no client activity this long. A session with a call in flight, a running task or an open stream is never ended for idleness.",
    ),
  spawnTimeoutMs: positiveMs
    .default(60_000)
    .describe(
      "Time a new stdio server process gets to answer initialize (npx may download the package first); it is killed after that.",
    ),
  stopTimeoutMs: positiveMs
    .default(2_000)
    .describe(
      "When a stdio server process is ended: how long after closing its stdin it gets before SIGTERM, and after SIGTERM before SIGKILL.",
    ),
  maxLineBytes: z
    .number()
    .int()
    .min(1_024)
    .default(8 * 1024 * 1024)
    .describe(
      "Largest JSON-RPC message (one line) a stdio server may write to stdout; a longer line ends its session with an error.",
    ),
  replayBytes: z
    .number()
    .int()
    .min(0)
    .default(1024 * 1024)
    .describe(
      "Per stdio session, how many bytes of recent SSE events are kept so a client that reconnects with Last-Event-ID gets what it missed. 0 disables resumption.",
    ),
  connections: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Maximum concurrent connections to the upstream; 0 means no gateway-side limit. Every in-flight request and every open event stream (GET streams, listens, running tasks) holds one, so a low limit lets long-lived streams starve everything else.",
    ),
  http2: z
    .boolean()
    .default(false)
    .describe(
      "Offer HTTP/2 to an https:// upstream (ALPN, undici allowH2); an upstream that does not choose h2 is spoken to over HTTP/1.1 as before. On h2, requests share connections: up to upstream.http2MaxStreams at once on each, so held calls (open event streams, working tasks) no longer cost a connection each. Off by default. With h2, an upstream's GOAWAY (a restart, or a cap on requests per connection such as nginx's keepalive_requests) ends every call still open on that connection, as a dropped connection does. Needs an https:// upstream.url (no h2c).",
    ),
  http2MaxStreams: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(100)
    .describe(
      "With upstream.http2, the most requests carried at once on one h2 connection; the next one opens another connection. Must not exceed the upstream's SETTINGS_MAX_CONCURRENT_STREAMS (nginx 128, Go 250, Node unlimited; RFC 9113 recommends at least 100): requests beyond the upstream's limit wait for a stream to end, and a held call may never end. upstream.connections still caps the connections, so at most connections × http2MaxStreams requests run at once.",
    ),
  caFile: z
    .string()
    .min(1)
    .optional()
    .describe(
      "A PEM file of certificate authorities to trust for an https:// upstream, on top of Node's bundled roots (e.g. a private CA, or a self-signed upstream's own certificate). Read once at start. The NODE_EXTRA_CA_CERTS environment variable does the same for the whole process; when upstream.caFile is set, the upstream connection trusts Node's bundled roots and this file, and no longer the NODE_EXTRA_CA_CERTS ones.",
    ),
  keepAliveTimeoutMs: positiveMs
    .default(4_000)
    .describe(
      "How long an idle upstream keep-alive connection is kept open: below Node's 5 s server default, so the gateway never reuses a socket the upstream is closing.",
    ),
  connectTimeoutMs: positiveMs
    .default(10_000)
    .describe(
      "Time allowed to establish a TCP/TLS connection to the upstream (504 upstream_connect_timeout on expiry).",
    ),
  headersTimeoutMs: positiveMs
    .default(300_000)
    .describe(
      "Time allowed for the upstream to send response headers (504 on expiry). SSE answers send headers at once; JSON answers only when the call ends.",
    ),
  controlTimeoutMs: positiveMs
    .default(10_000)
    .describe(
      "Deadline for the gateway's own short messages to the upstream: cancellations, answers to the upstream's input requests, resources/subscribe, session DELETE, and reading the body of a refused legacy initialize (504 past it). They must not hang on an upstream that stopped answering.",
    ),
  era: z
    .enum(["auto", "legacy", "modern"])
    .default("auto")
    .describe(
      "Which MCP era the upstream speaks. auto probes server/discover once: an upstream that answers it is modern (2026-07-28), else legacy (≤ 2025-11-25); legacy clients pass through until the upstream refuses a legacy initialize, after which the gateway serves their sessions itself. modern: the gateway serves every legacy client's session itself and sends the upstream only stateless 2026-07-28 requests, even if the upstream would accept legacy ones.",
    ),
  idleTimeoutMs: nonNegativeMs
    .default(0)
    .describe(
      "Abort an upstream response body that sends nothing for this long. 0 disables it, because idle SSE streams are normal.",
    ),
  headers: staticHeadersSchema,
  oauth: oauthSchema
    .optional()
    .describe(
      "Credentials the gateway obtains for this upstream as an OAuth client, per caller: a service account (clientCredentials), a token exchanged for the caller's (tokenExchange), or each user's own consent (userConsent). The upstream then gets that token as its Authorization, never the caller's own.",
    ),
});

function refineUpstream(u: z.output<typeof upstreamFields>, ctx: z.RefinementCtx): void {
  if (u.url === undefined && u.command === undefined) {
    ctx.addIssue({ code: "custom", path: ["url"], message: "is required (or upstream.command, for a stdio server)" });
  } else if (u.url !== undefined && u.command !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["command"],
      message: "set upstream.url (--upstream) or upstream.command (--upstream-command), not both",
    });
  }
  // TLS settings only mean something on an https:// upstream: anywhere else they would be silently ignored.
  const tls = u.url !== undefined && isHttps(u.url);
  if (u.http2 && !tls) {
    ctx.addIssue({
      code: "custom",
      path: ["http2"],
      message: "needs an https:// upstream.url: HTTP/2 is negotiated in the TLS handshake (ALPN)",
    });
  }
  if (u.caFile !== undefined && !tls) {
    ctx.addIssue({ code: "custom", path: ["caFile"], message: "needs an https:// upstream.url" });
  }
  if (u.warmProcesses > 0 && u.command === undefined) {
    ctx.addIssue({ code: "custom", path: ["warmProcesses"], message: "needs a stdio upstream (upstream.command)" });
  }
  if (u.warmProcesses > u.maxProcesses) {
    ctx.addIssue({
      code: "custom",
      path: ["warmProcesses"],
      message: `must not exceed upstream.maxProcesses (${u.maxProcesses}): warm processes count within it`,
    });
  }
  if (u.oauth !== undefined && u.command !== undefined)
    ctx.addIssue({
      code: "custom",
      path: ["oauth"],
      message: "needs an HTTP upstream (url); a stdio server takes env",
    });
  if (u.oauth !== undefined && Object.keys(u.headers).some((h) => h.toLowerCase() === "authorization"))
    ctx.addIssue({
      code: "custom",
      path: ["oauth"],
      message: "sets this upstream's Authorization, and so does headers.authorization; choose one",
    });
  // A stdio server takes its settings through env; headers would be silently ignored.
  if (u.command !== undefined && Object.keys(u.headers).length > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["headers"],
      message: "needs an HTTP upstream (url); a stdio server takes env",
    });
  }
}

export const upstreamSchema = upstreamFields.strict().superRefine(refineUpstream);

const serverSchema = z
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
    maxSessionsPerCaller: z
      .number()
      .int()
      .min(1)
      .default(1_000)
      .describe(
        "Sessions one verified caller (auth.jwt) may have bound at once; past it, its oldest session's binding goes and that session answers 404.",
      ),
    sseKeepAliveMs: nonNegativeMs
      .default(15_000)
      .describe(
        "Send an SSE comment on an idle event stream after this long, so load balancers keep it open. 0 disables it.",
      ),
    allowedOrigins: z
      .array(z.string().min(1))
      .default([])
      .describe(
        "Browser origins allowed to call the gateway besides loopback ones (e.g. https://app.example.com). The entry * allows every origin. Requests without an Origin header are always allowed.",
      ),
    allowLoopbackOrigins: z
      .boolean()
      .default(true)
      .describe(
        "Allow Origin values on a loopback host: localhost, *.localhost, 127.0.0.0/8, [::1] and [::ffff:127.x.y.z].",
      ),
    shutdownGraceMs: nonNegativeMs
      .default(10_000)
      .describe("On SIGINT/SIGTERM, how long in-flight requests get to finish before they are cut."),
    readyTimeoutMs: positiveMs.default(2_000).describe("How long /readyz waits for the upstream before answering 503."),
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
    internalPort: port
      .default(0)
      .describe("Port of the internal listener; 0 picks a free one (it is registered in the store)."),
    internalSocketDir: z
      .string()
      .min(1)
      .max(80)
      .optional()
      .describe(
        "A directory where the internal listener also listens on a Unix domain socket, for replicas of one host: those given the same directory forward to each other through it rather than loopback TCP (no TCP stack, no TLS). It must be a directory of this user with no access for group or others (mode 0700), or the start fails. --workers N makes a private one for its workers when this is unset, and removes it on shutdown. Forwarded requests are still checked for their replica credential.",
      ),
    publicUrl: httpUrl
      .optional()
      .describe(
        "The gateway's external base URL (https://mcp.example.com), for links it hands out: consent links and OAuth callbacks (upstreams.<name>.oauth userConsent). Default: the origin of the request that needed the link.",
      ),
    advertiseUrl: httpUrl
      .optional()
      .describe(
        "How other replicas reach this one's internal listener, e.g. http://10.0.0.5:8643. Default: http://internalHost:internalPort as bound.",
      ),
    internalTls: z
      .object({
        cert: z.string().min(1).describe("PEM file of this replica's certificate (its server and client certificate)."),
        key: z.string().min(1).describe("PEM file of the certificate's private key."),
        ca: z
          .string()
          .min(1)
          .describe("PEM file of the CA(s) that signed every replica's certificate: the only ones trusted."),
      })
      .strict()
      .optional()
      .describe(
        "TLS between replicas: the internal listener serves HTTPS and asks for a client certificate, and forwarded requests verify the target's; both must chain to `ca`. Required when the internal listener is advertised on a non-loopback address, unless internalInsecure is true.",
      ),
    internalInsecure: z
      .boolean()
      .default(false)
      .describe(
        "Allow plain HTTP between replicas on a non-loopback address (a private network you trust): forwarded requests carry clients' credentials. A warning is logged at start.",
      ),
  })
  .strict();

/** The host other replicas reach this one's internal listener at (server.advertiseUrl, else internalHost). */
export function internalAdvertisedHost(server: { advertiseUrl?: string | undefined; internalHost: string }): string {
  return server.advertiseUrl === undefined ? server.internalHost : new URL(server.advertiseUrl).hostname;
}

/** Whether forwarded requests would cross hosts in clear text. */
export function internalInClear(server: {
  advertiseUrl?: string | undefined;
  internalHost: string;
  internalTls?: unknown;
}): boolean {
  return server.internalTls === undefined && !isLoopbackHost(internalAdvertisedHost(server));
}

const eraBridgeSchema = z
  .object({
    cacheTtlMs: nonNegativeMs
      .default(0)
      .describe(
        "ttlMs stamped on list/read/discover results bridged from a legacy upstream (which cannot say how long they stay fresh). 0: clients re-fetch every time.",
      ),
    cacheScope: z
      .enum(["public", "private"])
      .default("private")
      .describe(
        "cacheScope stamped on bridged list/read/discover results. private: results may depend on the caller's credentials.",
      ),
    sessionIdleMs: positiveMs
      .default(300_000)
      .describe(
        "Close a session the era bridge holds after it has been idle this long: a legacy upstream session it opened for modern clients, or a legacy client's session it serves in front of a modern-only upstream.",
      ),
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
      .describe(
        "Most sessions the era bridge holds at once, of each kind: legacy upstream sessions it opened for modern clients (one per distinct caller credentials and capabilities), and legacy client sessions it serves in front of a modern-only upstream (the least recently used goes first).",
      ),
    inputRequestTtlMs: positiveMs
      .default(300_000)
      .describe(
        "How long an upstream call waits for a client's MRTR retry (its input responses) before it is cancelled.",
      ),
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
    inputGatherMs: nonNegativeMs
      .default(50)
      .describe(
        "Input requests a legacy upstream sends together (a tool awaiting elicitation, sampling and roots with Promise.all) become one input_required round (or one task update): after the first, the gateway keeps reading the call for this long for more. The SDK sends such requests within a millisecond of each other; 50 ms covers a busy event loop and costs every input round at most that. 0: each request is its own round.",
      ),
    maxInputRequestsPerRound: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .default(16)
      .describe(
        "Most input requests gathered into one round; reaching it ends the round at once (the rest come in the next one).",
      ),
    toolSchemaTtlMs: nonNegativeMs
      .default(300_000)
      .describe(
        "How long the x-mcp-header annotations of a legacy upstream's tools (learnt from the tools/list answers the gateway bridges, or asked for when a call names a tool not seen yet) are trusted for Mcp-Param-* validation. A client refused with -32020 re-lists the tools, which refreshes them. 0: asked for on every call.",
      ),
    toolSchemaCacheBytes: z
      .number()
      .int()
      .min(0)
      .default(4 * 1024 * 1024)
      .describe(
        "Memory for those annotations, over every caller (one entry per upstream credentials: the tool names and the annotated property paths only, not the schemas). Least recently used entries go first; 0 turns Mcp-Param-* validation off.",
      ),
    requestStateSecret: z
      .string()
      .min(32)
      .optional()
      .describe(
        "Key that signs MRTR requestState, at least 32 characters. Optional: by default each process draws one, and replicas sharing a store agree on one kept in the store, so no secret has to be copied between hosts.",
      ),
  })
  .strict();

/** Claim path (dotted for nested claims) → glob(s); see src/policy/claims.ts. */
const claimMatchSchema = z
  .record(z.string().min(1), z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]))
  .describe(
    "Verified token claims (auth.jwt) the caller must have: every listed claim must match one of its globs. Arrays match on any element; scope/scp strings also match on each space-separated scope; dotted paths reach nested claims (realm_access.roles). Without auth.jwt no caller has claims, so such a rule never applies.",
  );

const upstreamGlob = z
  .string()
  .min(1)
  .optional()
  .describe(
    "Glob over upstream names (the keys of upstreams; the single upstream is default) this rule is for. Without it, the rule is for every upstream.",
  );

const taskRuleFields = z
  .object({
    tool: z.string().min(1).describe("Glob over tool names: * matches any run of characters, ? one character."),
    match: claimMatchSchema.optional(),
    mode: z
      .enum(["auto", "always", "never", "required"])
      .describe(
        "auto: a task only if the call runs past thresholdMs; always: a task at once; never: plain pass-through; required: a task, and clients that do not declare the extension get -32021.",
      ),
    thresholdMs: nonNegativeMs.optional().describe("Threshold for this rule (auto)."),
    ttlMs: positiveMs.optional().describe("Task TTL for this rule (capped by tasks.maxTtlMs)."),
    pollIntervalMs: positiveMs
      .optional()
      .describe(
        "Suggested poll interval for this rule. Set here, it is used as is: the adaptive poll hint does not replace it.",
      ),
    adaptive: z
      .boolean()
      .optional()
      .describe(
        "false: adaptive promotion leaves this rule's tools alone (their calls are not timed, never promoted at once, and get the configured poll interval). Default: tasks.adaptive.",
      ),
  })
  .strict();
const taskRuleSchema = taskRuleFields.extend({ upstream: upstreamGlob });

const tasksSchema = z
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
    defaultTtlMs: positiveMs
      .default(3_600_000)
      .describe("How long a task and its result are kept after creation (1 h)."),
    maxTtlMs: positiveMs.default(86_400_000).describe("Ceiling on any task TTL, rules included (24 h)."),
    pollIntervalMs: positiveMs
      .default(1_000)
      .describe(
        "Suggested interval between tasks/get polls, for a tool without latency history (or with tasks.adaptive off).",
      ),
    adaptive: z
      .boolean()
      .default(true)
      .describe(
        "Adaptive promotion: the gateway keeps a small decaying latency histogram per tool (bounded LRU; shared through tasks.store when it is Redis). Under auto, a tool whose recent calls mostly ran past the threshold (at least 5 samples, 75 % of the recent weight past it; it goes back below 50 %) becomes a task at once, without waiting for the threshold; and a task's pollIntervalMs follows the tool's expected remaining time, within minPollIntervalMs..maxPollIntervalMs. false turns both off.",
      ),
    minPollIntervalMs: positiveMs
      .default(250)
      .describe("Lower bound of the adaptive poll hint (a task expected to end soon is polled this often at most)."),
    maxPollIntervalMs: positiveMs
      .default(5_000)
      .describe(
        "Upper bound of the adaptive poll hint (a task expected to run for an hour is still polled this often).",
      ),
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
        "Byte budget of the task store (all records with their results; with Redis, over every replica). At the budget, finished tasks are evicted, least recently used first (finishing and a tasks/get are uses); unfinished tasks are never evicted: a new task is refused instead (auto: the call stays plain; always/required: an error), and a result that cannot get room ends its task failed (result_too_large). Each unfinished task keeps 1 KiB of room for that failure.",
      ),
    maxBytesPerCaller: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "Most bytes one caller's tasks (unfinished and finished, with results) may take in the store; at most storeBytes. Past it, that caller's own least recently used finished tasks are evicted (never another caller's), and a new task is refused while its unfinished ones fill the quota. Default: storeBytes (no quota beyond the budget); set it when callers share a gateway.",
      ),
    store: z
      .string()
      .refine(
        (v) => v === "memory" || /^rediss?(-sentinel|-cluster)?:\/\//.test(v),
        "must be memory, or a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL",
      )
      .default("memory")
      .describe(
        "Where tasks live: memory (one process; lost on restart), or Redis shared by every replica and worker, so tasks outlive the process and any replica serves any task: redis://[user:pass@]host[:port][/db] (rediss:// for TLS), redis-sentinel://[user:pass@]host:port[,host:port…][/db]#masterName (a Sentinel-managed primary), or redis-cluster://[user:pass@]host:port[,host:port…] (Redis Cluster from seed nodes; rediss-sentinel:// and rediss-cluster:// for TLS).",
      ),
    redisTls: z
      .object({
        ca: z.string().min(1).optional().describe("CA certificate(s) to trust: PEM text or a file path."),
        cert: z.string().min(1).optional().describe("Client certificate (mutual TLS): PEM text or a file path."),
        key: z.string().min(1).optional().describe("Client certificate's private key: PEM text or a file path."),
        servername: z
          .string()
          .min(1)
          .optional()
          .describe("Name the server certificate must carry (SNI). Default: the host connected to."),
      })
      .strict()
      .optional()
      .describe(
        "TLS to the Redis of tasks.store, for any of its forms (set, it turns TLS on even for a redis:// URL). Without it, rediss:// uses the system's CAs.",
      ),
    redisWaitReplicas: z
      .number()
      .int()
      .min(0)
      .max(16)
      .default(0)
      .describe(
        "With a Redis store: a task's creation and its completion are acknowledged only once this many replicas of the Redis primary (or cluster master) confirm them (WAIT), so a failover cannot lose what a client was told. 0: asynchronous replication (a failover may lose the last writes). A write not confirmed within redisWaitTimeoutMs is not acknowledged: creation then follows the store-down rules (auto stays plain, an error otherwise).",
      ),
    redisWaitTimeoutMs: positiveMs
      .default(1_000)
      .describe("How long a write waits for redisWaitReplicas replicas to confirm it before it counts as not stored."),
    storePrefix: z
      .string()
      .min(1)
      .max(100)
      .default("mcp-gateway:")
      .describe(
        "Prefix of every key the gateway writes in a shared store; replicas that share tasks use the same prefix.",
      ),
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
      .describe(
        "How often a replica looks for unfinished tasks whose lease lapsed, so a task nobody polls still ends.",
      ),
    forwardTimeoutMs: positiveMs
      .default(10_000)
      .describe(
        "How long a replica waits for the replica running a task to apply a forwarded tasks/update, tasks/cancel or MRTR retry before answering an error.",
      ),
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
  .refine((t) => t.maxResultBytes < t.storeBytes, {
    message: "maxResultBytes must be smaller than storeBytes",
    path: ["maxResultBytes"],
  })
  .refine((t) => t.maxBytesPerCaller === undefined || t.maxBytesPerCaller <= t.storeBytes, {
    message: "maxBytesPerCaller must not exceed storeBytes",
    path: ["maxBytesPerCaller"],
  })
  .refine((t) => t.defaultTtlMs <= t.maxTtlMs, {
    message: "defaultTtlMs must not exceed maxTtlMs",
    path: ["defaultTtlMs"],
  })
  .refine((t) => t.minPollIntervalMs <= t.maxPollIntervalMs, {
    message: "minPollIntervalMs must not exceed maxPollIntervalMs",
    path: ["minPollIntervalMs"],
  });

const accessRuleFields = z
  .object({
    tools: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe("Glob(s) over tool names this rule covers."),
    match: claimMatchSchema.optional(),
    effect: z
      .enum(["allow", "deny"])
      .describe(
        "allow: the caller sees and may call these tools; deny: they vanish from its tools/list and a call is refused before it reaches the upstream.",
      ),
  })
  .strict();
const accessRuleSchema = accessRuleFields.extend({ upstream: upstreamGlob });

const accessSchema = z
  .object({
    default: z
      .enum(["allow", "deny"])
      .default("allow")
      .describe("What applies to a tool no rule covers for this caller."),
    rules: z
      .array(accessRuleSchema)
      .default([])
      .describe("Tool access by caller; the first rule whose tools and match both fit the caller decides."),
  })
  .strict();

// ── limits: rate limits per caller, tool and upstream ───────────────────────

/** A rule name: it keys the budget and is written as it is into headers (an sf-string), metrics and logs. */
const RATE_RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

const rateLimitRuleSchema = z
  .object({
    name: z
      .string()
      .regex(RATE_RULE_NAME, "letters, digits, _ . : - (at most 64, starting with a letter or digit)")
      .optional()
      .describe(
        "Used in errors, RateLimit headers, metrics and logs, and to key the rule's budget. Default: rule-<index> (its place in limits.rules).",
      ),
    method: z
      .string()
      .min(1)
      .default("tools/call")
      .describe("Glob over JSON-RPC methods (tools/call, tasks/get, tasks/*, *)."),
    tool: z
      .string()
      .min(1)
      .optional()
      .describe("Glob over tool names: a rule with one matches only tools/call of those tools."),
    upstream: upstreamGlob,
    match: claimMatchSchema.optional(),
    per: z
      .enum(["caller", "global"])
      .default("caller")
      .describe(
        "caller: one budget per caller (the verified identity with auth.jwt, else tasks.identityHeader, else the credential digest); global: one budget shared by every caller.",
      ),
    requests: z.number().int().positive().describe("How many requests the rule allows per perMs."),
    perMs: positiveMs.describe("The window requests is counted over (ms)."),
    burst: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "How many requests may be spent at once. Default: requests, so a caller may spend a whole window's budget at once.",
      ),
  })
  .strict();

const limitsSchema = z
  .object({
    rules: z
      .array(rateLimitRuleSchema)
      .default([])
      .refine(
        (rules) => {
          const names = rules.map((r, i) => r.name ?? `rule-${i}`);
          return new Set(names).size === names.length;
        },
        { message: "two rules have the same name (each name keys a budget of its own)" },
      )
      .describe(
        "Rate limits (GCRA): every rule that matches a request applies, and the request must fit all of them; one over is answered 429 with Retry-After and RateLimit headers, and never reaches the upstream. With a redis:// tasks.store the budgets are shared by every replica and worker.",
      ),
    onStoreDown: z
      .enum(["allow", "deny"])
      .default("allow")
      .describe(
        "When the limits' store (Redis) cannot be reached: allow lets requests through unlimited (a warning at most once a minute, and a counter); deny refuses them with 503.",
      ),
  })
  .strict();

// ── auth: verified bearer tokens (JWT, RFC 9068 style) ──────────────────────

/**
 * Signature algorithms a token may use. Asymmetric only: with keys from a JWKS,
 * an HS* allow-list would let a public key be used as an HMAC secret (algorithm
 * confusion), and "none" is never a signature.
 */
const JWT_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
] as const;

const noWhitespace = z.string().min(1).regex(/^\S+$/, "must not contain whitespace");

/** A public JWK: private ("d") and symmetric ("oct") keys do not belong in a config file or a key set that verifies. */
const publicJwkSchema = z
  .looseObject({
    kty: z.string().min(1).describe('Key type, as RFC 7517 names it: "RSA", "EC" or "OKP".'),
  })
  .refine(
    (k) => !Object.hasOwn(k, "d") && k.kty !== "oct",
    "must be a public key: no private (d) or symmetric (oct) keys",
  );

export const authJwtSchema = z
  .object({
    jwksUrl: httpUrl
      .optional()
      .describe(
        "URL of the authorization server's JSON Web Key Set (jwks_uri in its metadata). Fetched on first use, cached, refetched when a token names an unknown kid (at most once per jwksCooldownMs) and after jwksCacheMaxAgeMs. Use https: these keys decide which tokens are trusted. Exactly one of jwksUrl and jwks.",
      ),
    jwks: z
      .looseObject({
        keys: z
          .array(publicJwkSchema)
          .min(1)
          .describe("The public keys (JWKs, RFC 7517), each with its kty and the members its type needs."),
      })
      .optional()
      .describe(
        "Inline JSON Web Key Set ({ keys: [...] }, public keys only), for keys that are not published at a URL. Exactly one of jwksUrl and jwks.",
      ),
    issuer: z
      .union([noWhitespace, z.array(noWhitespace).min(1)])
      .describe(
        "Accepted iss claim value (exact match), or several. The identity of a caller is issuer + identityClaim.",
      ),
    audience: z
      .union([noWhitespace, z.array(noWhitespace).min(1)])
      .describe(
        "Accepted aud claim value(s): the token must name one of them. Usually this gateway's resource identifier (auth.resourceMetadata.resource); the MCP authorization spec requires tokens issued for this resource.",
      ),
    algorithms: z
      .array(z.enum(JWT_ALGORITHMS))
      .min(1)
      .default(["RS256", "ES256", "PS256", "EdDSA"])
      .describe("Allow-list of signature algorithms (alg header). Asymmetric only: none and HS* are never accepted."),
    clockToleranceSec: z
      .number()
      .int()
      .min(0)
      .max(300)
      .default(60)
      .describe(
        "Clock skew allowed when checking exp and nbf, in seconds. 60 s covers ordinary NTP drift between the gateway and the authorization server.",
      ),
    identityClaim: z
      .string()
      .min(1)
      .default("sub")
      .describe(
        "Claim that names the caller (a string, or an integer). Tasks and MRTR state are bound to issuer + this claim, so they survive token refreshes.",
      ),
    jwksTimeoutMs: positiveMs
      .default(5_000)
      .describe("Deadline for one JWKS fetch, body included (503 to the request that waited for it)."),
    jwksCacheMaxAgeMs: positiveMs
      .default(600_000)
      .describe(
        "Fetched keys are used for at most this long; then the key set is fetched again before the next token is verified (10 min).",
      ),
    jwksCooldownMs: nonNegativeMs
      .default(30_000)
      .describe(
        "Least time between two JWKS fetches caused by tokens naming an unknown kid, so forged kids cannot make the gateway hammer the authorization server.",
      ),
    verifiedCacheMs: nonNegativeMs
      .default(60_000)
      .describe(
        "How long a token that verified is trusted again without checking its signature (never past its exp): a poller sends the same token on every tasks/get, and a signature check costs 100-200 µs of CPU. A key removed from the JWKS stops being accepted within this time. 0 verifies every request.",
      ),
    verifiedCacheEntries: z
      .number()
      .int()
      .min(1)
      .default(10_000)
      .describe("Most verified tokens remembered (least recently used go first); each costs about 1 KB."),
  })
  .strict()
  .refine((j) => (j.jwksUrl === undefined) !== (j.jwks === undefined), {
    message: "set exactly one of jwksUrl and jwks",
    path: ["jwksUrl"],
  });

/**
 * The RFC 9728 protected resource metadata document, served at
 * /.well-known/oauth-protected-resource[/path]. Its fields keep the RFC's
 * snake_case names: the block is the document, served as written.
 */
export const resourceMetadataSchema = z
  .object({
    resource: httpUrl
      .refine((s) => !s.includes("#"), "must not contain a fragment")
      .describe(
        "This gateway's resource identifier: the URL clients use for the MCP endpoint, e.g. https://mcp.example.com/mcp (RFC 9728 resource).",
      ),
    authorization_servers: z
      .array(httpUrl)
      .min(1)
      .describe(
        "Issuer URLs of the authorization servers that issue tokens for this resource (RFC 9728 authorization_servers).",
      ),
    scopes_supported: z
      .array(z.string().min(1))
      .optional()
      .describe("Scopes clients may request for this resource (RFC 9728 scopes_supported)."),
    bearer_methods_supported: z
      .array(z.enum(["header"]))
      .default(["header"])
      .describe(
        "How tokens are presented: header only (Authorization: Bearer). The MCP authorization spec forbids tokens in the query string.",
      ),
    resource_name: z
      .string()
      .min(1)
      .optional()
      .describe("Human-readable name of this resource (RFC 9728 resource_name)."),
    resource_documentation: httpUrl
      .optional()
      .describe("URL of human-readable documentation for developers (RFC 9728 resource_documentation)."),
    resource_policy_uri: httpUrl
      .optional()
      .describe("URL of the resource's data usage policy (RFC 9728 resource_policy_uri)."),
    resource_tos_uri: httpUrl
      .optional()
      .describe("URL of the resource's terms of service (RFC 9728 resource_tos_uri)."),
  })
  .strict();

/** Header names the gateway must not let the identity header replace. */
const RESERVED_HEADERS = new Set([
  "authorization",
  "cookie",
  "host",
  "connection",
  "content-length",
  "content-type",
  "transfer-encoding",
  "mcp-session-id",
  "mcp-protocol-version",
]);

export const authSchema = z
  .object({
    jwt: authJwtSchema.describe("Bearer tokens are JWTs verified here: signature (JWKS), issuer, audience, expiry."),
    resourceMetadata: resourceMetadataSchema
      .optional()
      .describe(
        "RFC 9728 protected resource metadata: served at /.well-known/oauth-protected-resource (and the MCP path under it) and named in every 401 challenge (resource_metadata).",
      ),
    realm: z
      .string()
      .min(1)
      .regex(/^[\x20-\x7e]+$/, "must be printable ASCII")
      .optional()
      .describe("realm of the WWW-Authenticate challenge (RFC 6750). Omitted when not set."),
    upstreamCredentials: z
      .enum(["forward", "drop", "identity"])
      .default("drop")
      .describe(
        "What the upstream learns of the caller. drop: the Authorization header is removed (the MCP authorization spec forbids passing a client's token on); identity: removed, and the verified identity claim sent in upstreamIdentityHeader; forward: the token goes upstream as received (only when the upstream is the audience too).",
      ),
    upstreamIdentityHeader: z
      .string()
      .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "must be an HTTP header name")
      .refine(
        (h) => !RESERVED_HEADERS.has(h.toLowerCase()),
        "must not be a header the gateway or the MCP transport uses",
      )
      .default("x-mcp-gateway-subject")
      .describe(
        "Header carrying the verified identity claim upstream when upstreamCredentials is identity; a value the client sent in it is replaced.",
      ),
    vault: vaultSchema
      .optional()
      .describe("Encryption of stored user grants (upstreams.<name>.oauth.mode userConsent)."),
  })
  .strict();

const logSchema = z
  .object({
    level: z
      .enum(["silent", "error", "warn", "info", "debug"])
      .default("info")
      .describe("Log verbosity. Logs are JSON lines on stderr and never contain credentials."),
    access: z
      .boolean()
      .default(false)
      .describe(
        "One access log line per request (info level): method, route (the MCP path, /healthz, …; never the query), status, duration_ms, bytes (response body) and upstream_ms (until the upstream's answer headers, when the request went upstream as it is). Off by default: the audit trail already names every task.",
      ),
  })
  .strict();

const telemetrySchema = z
  .object({
    endpoint: httpUrl
      .optional()
      .describe(
        "OTLP/HTTP endpoint traces are exported to (JSON), as OTEL_EXPORTER_OTLP_ENDPOINT: spans go to {endpoint}/v1/traces. Without it, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on; with none of them tracing is off and costs nothing (a client's traceparent still reaches the upstream unchanged).",
      ),
    serviceName: z
      .string()
      .min(1)
      .optional()
      .describe("service.name of the spans. Default: OTEL_SERVICE_NAME, else mcp-task-gateway."),
    sampleRatio: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(
        "Share of new traces recorded (0 to 1), parent-based: a request whose traceparent says sampled (or not) is followed. Default: OTEL_TRACES_SAMPLER, else every trace.",
      ),
  })
  .strict();

const metricsSchema = z
  .object({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "Serve Prometheus metrics at GET /metrics (and the operator page at GET /status). On by default: their per-request work costs about 1.5 µs, under 1 % of a pass-through request's CPU (bench/RESULTS.md), hold no task ids, identities or arguments, and the gateway binds loopback by default. false: no metrics are kept and neither route exists.",
      ),
    port: port
      .optional()
      .describe(
        "Serve /metrics and /status on this port (a listener of their own, on metrics.host) instead of the main one, e.g. for a scrape network apart from client traffic. 0 picks a free port.",
      ),
    host: z.string().min(1).optional().describe("Interface of the metrics.port listener. Default: server.host."),
    token: z
      .string()
      .min(16)
      .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces")
      .optional()
      .describe(
        "Bearer token /metrics requires (Authorization: Bearer …), at least 16 characters; it also opens /status to non-loopback clients. Prefer the MCP_GATEWAY_METRICS_TOKEN environment variable to a file or flag. Without it /metrics answers anyone the Origin rules allow.",
      ),
    status: z
      .enum(["loopback", "public", "off"])
      .default("loopback")
      .describe(
        "Who may see the operator page (/status, /status.json): loopback clients, and others with metrics.token (loopback, the default); anyone the Origin rules allow (public); nobody (off). The page never shows identities or arguments, and task ids only truncated.",
      ),
    toolLabels: z
      .array(z.string().min(1).max(128))
      .max(100)
      .default([])
      .describe(
        "Tool names that may appear as the tool label of the task metrics; every other tool is counted as other. Keeps the number of series bounded whatever names clients send.",
      ),
  })
  .strict();

// ── upstreams: many servers, each on its own route ──────────────────────────

/** The problem of a config with no upstream at all, at upstream.url (validate.ts says it when this check cannot run). */
export const NO_UPSTREAM = "is required (or upstream.command, or upstreams)";

/** What refineUpstreamSet reads of the whole config (the root's own type is not known yet where it runs). */
interface UpstreamSetView {
  upstream?: unknown;
  upstreams: Record<
    string,
    { headers: Record<string, string>; auth?: { upstreamCredentials?: string | undefined } | undefined }
  >;
  tasks: { rules: readonly { upstream?: string | undefined }[] };
  access: { rules: readonly { upstream?: string | undefined }[] };
  limits: { rules: readonly { upstream?: string | undefined }[] };
  auth?: unknown;
  federated: Record<string, { upstreams: readonly string[] }>;
}

/** Federated endpoints: names in the upstreams' namespace (one path each), members that are configured upstreams. */
function refineFederated(c: UpstreamSetView, ctx: z.RefinementCtx): void {
  const upstreams = new Set(Object.keys(c.upstreams));
  if (c.upstream !== undefined) upstreams.add(DEFAULT_UPSTREAM_NAME);
  for (const [name, endpoint] of Object.entries(c.federated)) {
    if (!UPSTREAM_NAME.test(name)) {
      ctx.addIssue({
        code: "custom",
        path: ["federated", name],
        message: `the name must match ${UPSTREAM_NAME.source} (lowercase letters, digits, _ and -, at most 32)`,
      });
    } else if (upstreams.has(name)) {
      ctx.addIssue({
        code: "custom",
        path: ["federated", name],
        message: `clashes with the upstream ${name}: federated endpoints and upstreams share one namespace (one path each)`,
      });
    }
    endpoint.upstreams.forEach((member, i) => {
      if (!upstreams.has(member))
        ctx.addIssue({
          code: "custom",
          path: ["federated", name, "upstreams", i],
          message: `names no configured upstream (${[...upstreams].join(", ")})`,
        });
    });
  }
}

/** The names, the rules' upstream globs and the per-upstream credentials, checked against each other. */
function refineUpstreamSet(c: UpstreamSetView, ctx: z.RefinementCtx): void {
  const names = Object.keys(c.upstreams);
  if (c.upstream === undefined && names.length === 0) {
    ctx.addIssue({
      code: "custom",
      path: ["upstream", "url"],
      message: NO_UPSTREAM,
    });
    return;
  }
  for (const name of names) {
    if (!UPSTREAM_NAME.test(name)) {
      ctx.addIssue({
        code: "custom",
        path: ["upstreams", name],
        message: `the name must match ${UPSTREAM_NAME.source} (lowercase letters, digits, _ and -, at most 32)`,
      });
    } else if (name === DEFAULT_UPSTREAM_NAME && c.upstream !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["upstreams", name],
        message: `clashes with the single upstream, which is called ${DEFAULT_UPSTREAM_NAME}; rename one`,
      });
    }
    const block = c.upstreams[name];
    const credentials = block?.auth?.upstreamCredentials;
    if (credentials === "identity" && c.auth === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["upstreams", name, "auth", "upstreamCredentials"],
        message: "identity needs auth (a verified token to take the identity from)",
      });
    }
    const ownAuthorization = Object.keys(block?.headers ?? {}).some((h) => h.toLowerCase() === "authorization");
    if (credentials === "forward" && ownAuthorization) {
      ctx.addIssue({
        code: "custom",
        path: ["upstreams", name, "auth", "upstreamCredentials"],
        message: "forward sends the client's token, but headers sets this upstream's own authorization; choose one",
      });
    }
  }
  refineFederated(c, ctx);
  // A rule that names no configured upstream is a typo more often than a plan: it would silently never apply.
  const known = c.upstream === undefined ? names : [...new Set([DEFAULT_UPSTREAM_NAME, ...names])];
  for (const section of ["tasks", "access", "limits"] as const) {
    c[section].rules.forEach((rule, i) => {
      if (rule.upstream === undefined) return;
      const glob = globToRegExp(rule.upstream);
      if (!known.some((n) => glob.test(n)))
        ctx.addIssue({
          code: "custom",
          path: [section, "rules", i, "upstream"],
          message: `matches no configured upstream (${known.join(", ")})`,
        });
    });
  }
}

/** An upstream's own policy, checked before the global one (whose rules may name it with `upstream`). */
const upstreamTasksSchema = z
  .object({
    thresholdMs: nonNegativeMs.optional().describe("This upstream's default threshold. Default: tasks.thresholdMs."),
    rules: z
      .array(taskRuleFields)
      .default([])
      .describe("This upstream's task rules, tried before tasks.rules (the first whose glob matches applies)."),
  })
  .strict();

const upstreamAccessSchema = z
  .object({
    default: z
      .enum(["allow", "deny"])
      .optional()
      .describe("What applies to a tool of this upstream no rule covers. Default: access.default."),
    rules: z
      .array(accessRuleFields)
      .default([])
      .describe("This upstream's access rules, tried before access.rules (the first that fits decides)."),
  })
  .strict();

const upstreamAuthSchema = z
  .object({
    upstreamCredentials: z
      .enum(["forward", "drop", "identity"])
      .optional()
      .describe(
        "What this upstream learns of the caller (as auth.upstreamCredentials, which it overrides). Without auth, drop and forward still apply to the client's Authorization header; identity needs auth. Default: auth.upstreamCredentials, or forward without auth (the gateway then passes credentials through, as a plain proxy).",
      ),
  })
  .strict();

const namedUpstreamSchema = upstreamFields
  .extend({
    tasks: upstreamTasksSchema.optional().describe("Task policy for this upstream's tools, before tasks.*."),
    access: upstreamAccessSchema.optional().describe("Tool access for this upstream's tools, before access.*."),
    auth: upstreamAuthSchema.optional().describe("Credentials this upstream gets, instead of auth.*."),
    tools: toolsBlockSchema.optional(),
    prompts: promptsBlockSchema.optional(),
    validateArguments: validateArgumentsSchema.default("off"),
    ...pinningFields,
  })
  .strict()
  .superRefine(refineUpstream);

export const gatewayConfigSchema = z
  .object({
    $schema: z.string().optional().describe("Path or URL of this file's JSON Schema."),
    upstream: upstreamSchema
      .optional()
      .describe("The upstream served at server.path. Required unless upstreams names at least one; both may be given."),
    federated: z
      .record(
        z.string(),
        z
          .object({
            upstreams: z
              .array(z.string().min(1))
              .min(1)
              .refine((l) => new Set(l).size === l.length, "names an upstream twice")
              .describe("The upstreams it federates, by name; each tool and prompt appears as <upstream>__<name>."),
            tools: federatedToolsSchema.optional(),
          })
          .strict(),
      )
      .default({})
      .describe(
        "Federated endpoints, by name: each serves at <server.path>/<name> the tools, prompts and resources of several upstreams as one server, under each upstream's own policy. Names share one namespace with upstreams. A reload may change them. 2026-07-28 clients for now.",
      ),
    federation: z
      .object({
        listTimeoutMs: positiveMs
          .default(5_000)
          .describe(
            "How long a federated list (tools, prompts, resources) waits for its upstreams; one that has not answered by then is left out of that list (and logged).",
          ),
        breakerFailures: z
          .number()
          .int()
          .positive()
          .default(3)
          .describe(
            "Consecutive failures (a 5xx answer, a network error, a list past listTimeoutMs) after which a federated endpoint skips a member: left out of lists at once, its calls answered 503 upstream_unavailable, until its back-off has passed.",
          ),
        breakerBackoffMs: positiveMs
          .default(1_000)
          .describe(
            "How long a member is skipped the first time its breaker opens; after that, the next request tries it again (one success closes the breaker, one failure reopens it for twice as long).",
          ),
        breakerMaxBackoffMs: positiveMs
          .default(60_000)
          .describe("The longest a member is skipped: the doubling back-off stops there."),
      })
      .strict()
      .prefault({})
      .describe(
        "How federated endpoints (federated) treat their members: the list deadline and each member's circuit breaker.",
      ),
    upstreams: z
      .record(z.string(), namedUpstreamSchema)
      .default({})
      .describe(
        "More upstreams, by name: each is served at <server.path>/<name> (/mcp/github), with its own connections, era probe, sessions and stdio processes, and its own policy and credentials on top of the global ones. Names match ^[a-z0-9][a-z0-9_-]{0,31}$. A reload may add, remove or change them.",
      ),
    server: serverSchema
      .prefault({})
      .describe(
        "The gateway's own listener (host, port, MCP path, limits on requests and sessions, browser origins, shutdown) and, with a shared store, its workers and the internal listener replicas forward requests to.",
      ),
    eraBridge: eraBridgeSchema
      .prefault({})
      .describe(
        "The era bridge, both ways: the legacy upstream sessions it opens for modern clients and the legacy client sessions it serves in front of a modern-only upstream, MRTR input rounds, and the tool annotations it keeps for Mcp-Param-* checks. Formerly `modern` (still accepted, with a warning).",
      ),
    tasks: tasksSchema
      .prefault({})
      .describe(
        "The Tasks extension the gateway serves: when a call becomes a task (thresholdMs, rules, adaptive promotion), task lifetimes and limits, the caller binding, and the task store (memory, or Redis shared by replicas).",
      ),
    log: logSchema.prefault({}).describe("Logs: JSON lines on stderr, never holding a secret."),
    telemetry: telemetrySchema
      .prefault({})
      .describe(
        "OpenTelemetry tracing (OTLP/HTTP export). Off unless an endpoint is configured here or in the OTEL_* environment.",
      ),
    metrics: metricsSchema
      .prefault({})
      .describe("Prometheus metrics (/metrics) and the operator page (/status): who may read them, and where."),
    access: accessSchema
      .prefault({})
      .describe(
        "Tool access by caller: rules that allow or deny tools by the caller's verified claims (live: a reload changes them).",
      ),
    limits: limitsSchema
      .prefault({})
      .describe("Rate limits per caller, tool and upstream (live: a reload changes them)."),
    auth: authSchema
      .optional()
      .describe(
        "Verified bearer tokens (OAuth 2.1 resource server, as the MCP authorization spec describes). Without it the gateway checks no tokens and passes credentials through.",
      ),
  })
  .strict()
  .refine(
    (c) =>
      c.tasks.store === "memory" ||
      c.server.advertiseUrl !== undefined ||
      !["0.0.0.0", "::", "[::]"].includes(c.server.internalHost),
    {
      message: "an internal listener on every interface needs server.advertiseUrl: other replicas cannot reach 0.0.0.0",
      path: ["server", "advertiseUrl"],
    },
  )
  .refine((c) => c.tasks.store === "memory" || c.server.internalInsecure || !internalInClear(c.server), {
    message:
      "an internal listener reached over the network needs server.internalTls (cert, key, ca): forwarded requests carry clients' credentials; set server.internalInsecure: true to allow plain HTTP on a network you trust",
    path: ["server", "internalTls"],
  })
  .refine((c) => c.auth === undefined || c.tasks.identityHeader === undefined, {
    message:
      "set auth or tasks.identityHeader, not both: with auth the verified token names the caller, and a header anyone can send must not",
    path: ["tasks", "identityHeader"],
  })
  .superRefine(refineUpstreamSet)
  .superRefine(refineOAuth)
  .refine((c) => c.server.workers === 1 || c.tasks.store !== "memory", {
    message:
      "more than one worker needs a shared task store: set --store redis://HOST:PORT (tasks.store), so every worker sees every task",
    path: ["server", "workers"],
  });

/** A fully validated configuration with every default filled in. */
export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
/** What a caller may pass: only `upstream.url` (or `upstream.command`) is required. */
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;
export type LogLevel = GatewayConfig["log"]["level"];
/** One upstream block, filled in: the single `upstream`, or an entry of `upstreams` (which also has its own policy). */
export type UpstreamConfig = z.output<typeof upstreamSchema>;
export type NamedUpstreamConfig = z.output<typeof namedUpstreamSchema>;
