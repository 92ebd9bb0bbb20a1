// Gateway replicas as real processes (`node --import tsx src/main.ts --config FILE`),
// sharing tasks in Redis, for the replicas-*.test.ts files: spawning them and
// reading their start line, killing them (gracefully, or with SIGKILL as a crash
// would), and raw 2026-07-28 requests to alternate between them.
//
// Every process is spawned in a process group of its own (so the primary of
// `--workers N` and its workers go together) and is killed by killAll(), which a
// test file calls in afterEach/afterAll, and, failing that, when this process exits.
import { signalGroup } from "./process-group.js";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sseMessages } from "./compare.js";
import type { RecordingProxy } from "./ext-tasks-client.js";
import { SseStream } from "./sse-stream.js";
import { delay, isRecord } from "./http.js";
import { modernHeaders, modernMeta } from "./modern-http.js";

export type Json = Record<string, unknown>;

const ROOT = new URL("../../", import.meta.url);
const START_TIMEOUT_MS = 20_000;

/** Any gateway's start line (a JSON log line), its first group the MCP URL. */
export const START_LINE = /"msg":"mcp-task-gateway listening on (http:\/\/127\.0\.0\.1:\d+\/mcp) → /;

/** The start line of a gateway whose tasks live in Redis (and, with --workers N, its worker count). */
export const REDIS_START_LINE =
  /"msg":"mcp-task-gateway listening on (http:\/\/127\.0\.0\.1:\d+\/mcp) → upstream (\S+), tasks in (\S+?)(?: \((\d+) workers\))?"/;

const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
/** A client that declares the Tasks extension (and form elicitation). */
export const DECLARING: Json = { extensions: { [TASKS_EXTENSION]: {} }, elicitation: { form: {} } };
/** A client without the Tasks extension (form elicitation only): MRTR, never tasks. */
export const NOT_DECLARING: Json = { elicitation: { form: {} } };

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ReplicaProcess {
  name: string;
  child: ChildProcessWithoutNullStreams;
  pid: number;
  /** The MCP endpoint; empty until started. */
  url: string;
  /** Scheme, host and port (/readyz lives here); empty until started. */
  origin: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<ExitInfo>;
  running(): boolean;
  /** SIGKILL to this process alone (a crash), and waits for it to be gone. */
  crash(): Promise<ExitInfo>;
  /** SIGTERM (graceful shutdown) and waits for the exit, at most `timeoutMs`. */
  terminate(timeoutMs?: number): Promise<ExitInfo>;
}

const live = new Set<ChildProcessWithoutNullStreams>();
let exitHook = false;

/** Replica processes of one test file: configs in a temporary directory, every process killed by killAll(). */
export class Replicas {
  private dir: Promise<string> | undefined;
  private n = 0;
  private readonly children: ReplicaProcess[] = [];

  private async configFile(name: string, config: Json): Promise<string> {
    // One directory, however many replicas start at once.
    this.dir ??= mkdtemp(join(tmpdir(), "mtg-replicas-"));
    const file = join(await this.dir, `${name}-${++this.n}.json`);
    await writeFile(file, JSON.stringify(config, null, 2));
    return file;
  }

  /**
   * Spawns a gateway process with `--config` (when given) and `args`; does not wait for it to start. `extraEnv`:
   * variables of the process's own, not settings (TMPDIR, say).
   */
  async spawn(
    name: string,
    config: Json | undefined,
    args: string[] = [],
    extraEnv: NodeJS.ProcessEnv = {},
  ): Promise<ReplicaProcess> {
    const configArgs = config === undefined ? [] : ["--config", await this.configFile(name, config)];
    const env: NodeJS.ProcessEnv = { ...process.env, ...extraEnv };
    // The config file says what the test means; nothing from the environment may add to it.
    for (const key of Object.keys(env)) if (key.startsWith("MCP_GATEWAY_")) delete env[key];
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...configArgs, ...args], {
      cwd: ROOT,
      env,
      detached: true,
    });
    live.add(child);
    child.once("exit", () => live.delete(child));
    if (!exitHook) {
      exitHook = true;
      process.once("exit", () => {
        for (const c of live) signalGroup(c, "SIGKILL");
      });
    }
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = once(child, "exit").then(([code, signal]) => ({ code, signal }));
    const running = (): boolean => child.exitCode === null && child.signalCode === null;
    const proc: ReplicaProcess = {
      name,
      child,
      pid: child.pid ?? -1,
      url: "",
      origin: "",
      stdout: () => out,
      stderr: () => err,
      exited,
      running,
      crash: async () => {
        if (running()) child.kill("SIGKILL");
        return await exited;
      },
      terminate: async (timeoutMs = 15_000) => {
        if (running()) child.kill("SIGTERM");
        const timer = setTimeout(() => signalGroup(child, "SIGKILL"), timeoutMs);
        try {
          return await exited;
        } finally {
          clearTimeout(timer);
        }
      },
    };
    this.children.push(proc);
    return proc;
  }

  /** Spawns a gateway and waits for its start line (with a redis store: `…, tasks in redis://…`). */
  /** `line`: the start line awaited, its first group the MCP URL (default: one upstream, tasks in Redis). */
  async start(
    name: string,
    config: Json,
    args: string[] = [],
    line = REDIS_START_LINE,
    extraEnv: NodeJS.ProcessEnv = {},
  ): Promise<ReplicaProcess> {
    const p = await this.spawn(name, config, args, extraEnv);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const m = line.exec(p.stdout());
      if (m?.[1]) {
        p.url = m[1];
        p.origin = new URL(m[1]).origin;
        return p;
      }
      if (!p.running()) throw new Error(`replica ${name} exited before its start line:\n${p.stdout()}\n${p.stderr()}`);
      if (Date.now() > deadline)
        throw new Error(
          `replica ${name} printed no start line within ${START_TIMEOUT_MS} ms:\n${p.stdout()}\n${p.stderr()}`,
        );
      await delay(25);
    }
  }

  /** SIGKILLs every process (group) still running and removes the config files. */
  async killAll(): Promise<void> {
    const all = this.children.splice(0);
    for (const p of all) if (p.running()) signalGroup(p.child, "SIGKILL");
    await Promise.all(all.map((p) => p.exited));
  }

  async cleanup(): Promise<void> {
    await this.killAll();
    if (this.dir) await rm(await this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

/**
 * The config of a replica sharing tasks in `store` under `prefix` (short leases and sweeps for tests). `upstream`:
 * its URL, or a whole upstream block (a stdio command); `extra`: more of the config (limits, server settings, which
 * are merged into the test's own).
 */
export function replicaConfig(
  upstream: string | Json,
  store: string,
  prefix: string,
  tasks: Json = {},
  extra: Json & { server?: Json } = {},
): Json {
  const { server, ...rest } = extra;
  return {
    ...rest,
    upstream: typeof upstream === "string" ? { url: upstream } : upstream,
    server: { host: "127.0.0.1", port: 0, shutdownGraceMs: 2_000, ...server },
    tasks: {
      store,
      storePrefix: prefix,
      leaseMs: 1_000,
      sweepIntervalMs: 500,
      drainMs: 0,
      thresholdMs: 200,
      pollIntervalMs: 50,
      ...tasks,
    },
    log: { level: "warn" },
  };
}

/** Pids of the gateway processes whose parent is `pid` (a cluster primary's workers), from /proc. */
export async function childPids(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) !== pid || fields[0] === "Z" || fields[0] === "X") continue;
      // Only gateway workers (a helper process of the runtime would not run src/main.ts).
      if ((await readFile(`/proc/${entry}/cmdline`, "utf8")).includes("src/main.ts")) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out.sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------
// Raw 2026-07-28 requests

export interface RpcOptions {
  id?: string | number;
  /** Capabilities in the envelope; default DECLARING. */
  caps?: Json;
  /** Extra headers (Authorization: who the caller is). */
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  message: Json;
  result: Json | undefined;
  error: Json | undefined;
}

let nextId = 1;

function defaultName(method: string, params: Json): string | undefined {
  const v = method === "tools/call" ? params.name : method.startsWith("tasks/") ? params.taskId : undefined;
  return typeof v === "string" ? v : undefined;
}

function responseIn(text: string, contentType: string | undefined, id: string | number): Json {
  const messages: unknown[] = contentType?.includes("text/event-stream") ? sseMessages(text) : [JSON.parse(text)];
  const found = messages.find((m) => isRecord(m) && m.id === id && ("result" in m || "error" in m));
  if (!isRecord(found)) throw new Error(`no response with id ${String(id)} in: ${text}`);
  return found;
}

function modernBody(id: string | number, method: string, params: Json, caps: Json): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method,
    params: {
      ...params,
      _meta: modernMeta({ capabilities: caps, clientInfo: { name: "replicas-test", version: "1.0.0" } }),
    },
  });
}

/**
 * One modern request on a connection of its own (no keep-alive: a replica killed
 * between two requests must not look like a broken pooled connection).
 */
export async function rpc(url: string, method: string, params: Json, opts: RpcOptions = {}): Promise<Reply> {
  const id = opts.id ?? `r-${nextId++}`;
  const body = modernBody(id, method, params, opts.caps ?? DECLARING);
  const { status, headers, text } = await new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>(
    (resolve, reject) => {
      const req = httpRequest(
        url,
        { method: "POST", headers: modernHeaders(method, defaultName(method, params), opts.headers), agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.once("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString("utf8"),
            }),
          );
          res.once("error", reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} on ${url}: no answer within 30 s`)));
      req.once("error", reject);
      req.end(body);
    },
  );
  const message = responseIn(text, headers["content-type"], id);
  return {
    status,
    headers,
    text,
    message,
    result: isRecord(message.result) ? message.result : undefined,
    error: isRecord(message.error) ? message.error : undefined,
  };
}

export function must<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`missing ${what}`);
  return v;
}

/** tools/call that must answer a CreateTaskResult; returns it. */
export async function createTask(
  url: string,
  name: string,
  args: Json,
  opts: RpcOptions = {},
): Promise<Json & { taskId: string }> {
  const reply = await rpc(url, "tools/call", { name, arguments: args }, opts);
  const result = must(reply.result, `a result for tools/call ${name} (got ${reply.status} ${reply.text})`);
  if (result.resultType !== "task" || typeof result.taskId !== "string")
    throw new Error(`tools/call ${name} did not answer a task: ${reply.text}`);
  return { ...result, taskId: result.taskId };
}

export const getTask = (url: string, taskId: string, opts: RpcOptions = {}): Promise<Reply> =>
  rpc(url, "tasks/get", { taskId }, opts);

export const isTerminal = (t: Json): boolean =>
  t.status === "completed" || t.status === "failed" || t.status === "cancelled";

/** Polls tasks/get on `url` until `until` holds (bounded); returns every result seen, the last one satisfying `until`. */
export async function pollTask(
  url: string,
  taskId: string,
  until: (t: Json) => boolean,
  opts: RpcOptions & { timeoutMs?: number } = {},
): Promise<Json[]> {
  const seen: Json[] = [];
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await getTask(url, taskId, opts);
    const t = must(reply.result, `a tasks/get result for ${taskId} (got ${reply.status} ${reply.text})`);
    seen.push(t);
    if (until(t)) return seen;
    if (Date.now() > deadline)
      throw new Error(
        `task ${taskId} did not reach the expected state within ${timeoutMs} ms; last: ${JSON.stringify(t)}`,
      );
    await delay(25);
  }
}

export function last<T>(xs: readonly T[]): T {
  return must(xs.at(-1), "a last element");
}

/** The text parts of a tool result, joined. */
export function textOf(result: unknown): string {
  if (!isRecord(result) || !Array.isArray(result.content)) return "";
  return result.content.map((c) => (isRecord(c) && typeof c.text === "string" ? c.text : "")).join("");
}

/** Polls `probe` until it returns a value (not undefined), or fails after `timeoutMs` naming `what`. */
export async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 10_000,
  stepMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(stepMs);
  }
}

/** GET /readyz as JSON. */
export async function readyz(origin: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${origin}/readyz`, { headers: { connection: "close" } });
  return { status: res.status, body: (await res.json()) as Json };
}

// ---------------------------------------------------------------------------
// An SSE response (subscriptions/listen) read as it arrives

/** A modern request whose streamed answer is read as it arrives. */
export function openStream(url: string, method: string, params: Json, opts: RpcOptions & { id: string }): SseStream {
  return new SseStream((signal) =>
    fetch(url, {
      method: "POST",
      headers: modernHeaders(method, defaultName(method, params), opts.headers),
      body: modernBody(opts.id, method, params, opts.caps ?? DECLARING),
      signal,
    }),
  );
}

export const isMethod =
  (method: string) =>
  (m: Json): boolean =>
    m.method === method;

/** The upstream tools/call the replicas sent (through `proxy`) for slow_task with this (unique) duration. */
export function upstreamSlowCall(proxy: RecordingProxy, durationMs: number) {
  return proxy
    .posted()
    .find(
      ({ message }) =>
        message.method === "tools/call" &&
        isRecord(message.params) &&
        isRecord(message.params.arguments) &&
        message.params.arguments.durationMs === durationMs,
    );
}
