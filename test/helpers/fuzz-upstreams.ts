// The upstreams of the fuzz run (test/integration/fuzz.test.ts):
// - a forwarder in front of the real SDK upstream that marks every answer the upstream gave (x-fuzz-upstream), so
//   the run can tell the gateway's own errors from relayed ones, and notes the errors the upstream answered with;
// - a scripted upstream answering each scripted call with a malformed event stream: events with no data, huge lines,
//   invalid UTF-8, `id:` alone, a stream cut mid-event, one that goes silent, one that never ends.
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { startScriptedUpstream, type ScriptedUpstream } from "./scripted-upstream.js";

/** Set on every answer an upstream gave, relayed or not: a gateway's own answer does not have it. */
export const UPSTREAM_MARK = "x-fuzz-upstream";

/** The error messages upstreams answered with (a relayed error is the upstream's, with no data.reason). */
export type SeenErrors = Set<string>;

const ERROR_IN_JSON = /"error":\{"code":-?\d+,"message":("(?:[^"\\]|\\.)*")/g;

function noteErrors(text: string, seen: SeenErrors): void {
  for (const m of text.matchAll(ERROR_IN_JSON)) {
    try {
      seen.add(JSON.parse(m[1]!) as string);
    } catch {
      // not a JSON string after all
    }
  }
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"]);

function endToEnd(headers: IncomingMessage["headers"], extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return { ...out, ...extra };
}

export interface MarkingForwarder {
  url: string;
  seenErrors: SeenErrors;
  /** Answers still open (a stream the gateway has not closed). */
  open(): number;
  close(): Promise<void>;
}

/** A forwarder to `target` (an http:// MCP endpoint) that marks its answers and notes their errors. */
export async function startMarkingForwarder(target: string): Promise<MarkingForwarder> {
  const to = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const seenErrors: SeenErrors = new Set();
  let open = 0;
  const server = createServer((req, res) => {
    open++;
    res.once("close", () => open--);
    const up = httpRequest(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: endToEnd(req.headers, { host: to.host }),
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers, { [UPSTREAM_MARK]: "1" }));
        // The first 64 KiB of each answer, for the errors in it (JSON or event stream alike).
        let noted = 0;
        answer.on("data", (chunk: Buffer) => {
          if (noted < 65_536) noteErrors(chunk.toString("utf8"), seenErrors);
          noted += chunk.length;
        });
        answer.pipe(res);
        answer.once("error", () => res.destroy());
      },
    );
    up.once("error", () => res.destroy());
    res.once("close", () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${to.pathname}`,
    seenErrors,
    open: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

// ── The malformed event streams ─────────────────────────────────────────────

type SseStep =
  | { kind: "answer" }
  | { kind: "answer with another id" }
  | { kind: "notification" }
  | { kind: "server request" }
  | { kind: "event without data" }
  | { kind: "id without data" }
  | { kind: "huge line"; size: number; terminated: boolean }
  | { kind: "invalid UTF-8" }
  | { kind: "data not JSON" }
  | { kind: "JSON not JSON-RPC" }
  | { kind: "comment" }
  | { kind: "bad retry" }
  | { kind: "CR line endings" }
  | { kind: "stop mid-event" }
  | { kind: "random bytes"; bytes: Uint8Array }
  | { kind: "wait"; ms: number };

/** How a stream ends: it ends, it is cut, it goes silent and stays open, it sends a comment every 100 ms for ever. */
type SseEnd = "end" | "cut" | "silent" | "trickle";

export interface SseScript {
  label: string;
  status: number;
  headers: Record<string, string>;
  steps: SseStep[];
  end: SseEnd;
}

const step: fc.Arbitrary<SseStep> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "answer" as const }) },
  fc.constant({ kind: "answer with another id" as const }),
  fc.constant({ kind: "notification" as const }),
  fc.constant({ kind: "server request" as const }),
  fc.constant({ kind: "event without data" as const }),
  fc.constant({ kind: "id without data" as const }),
  fc.record({
    kind: fc.constant("huge line" as const),
    size: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 1_000, max: 65_536 }) },
      fc.integer({ min: 65_536, max: 262_144 }),
    ),
    terminated: fc.boolean(),
  }),
  fc.constant({ kind: "invalid UTF-8" as const }),
  fc.constant({ kind: "data not JSON" as const }),
  fc.constant({ kind: "JSON not JSON-RPC" as const }),
  fc.constant({ kind: "comment" as const }),
  fc.constant({ kind: "bad retry" as const }),
  fc.constant({ kind: "CR line endings" as const }),
  fc.constant({ kind: "stop mid-event" as const }),
  fc.record({ kind: fc.constant("random bytes" as const), bytes: fc.uint8Array({ maxLength: 256 }) }),
  fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 30 }) }),
);

const END_LABEL: Record<SseEnd, string> = {
  end: "stream ends",
  cut: "stream cut",
  silent: "stream goes silent",
  trickle: "stream never ends",
};

/** `count` scripts, from `seed`; mostly 200 event streams, some with another status or a label that lies. */
export function sseScripts(seed: number, count: number): SseScript[] {
  const arb = fc.record({
    status: fc.oneof({ weight: 8, arbitrary: fc.constant(200) }, fc.constantFrom(202, 400, 401, 404, 500, 503)),
    contentType: fc.oneof(
      { weight: 8, arbitrary: fc.constant("text/event-stream") },
      fc.constantFrom("application/json", "text/html", "", "text/event-stream; charset=latin1"),
    ),
    gzipLabel: fc.oneof({ weight: 12, arbitrary: fc.constant(false) }, fc.constant(true)),
    steps: fc.array(step, { maxLength: 6 }),
    end: fc.oneof(
      { weight: 4, arbitrary: fc.constant<SseEnd>("end") },
      { weight: 2, arbitrary: fc.constant<SseEnd>("cut") },
      fc.constant<SseEnd>("silent"),
      fc.constant<SseEnd>("trickle"),
    ),
  });
  return fc.sample(arb, { seed, numRuns: count }).map(({ status, contentType, gzipLabel, steps, end }) => ({
    label: `${END_LABEL[end]}${status === 200 ? "" : `, status ${status}`}`,
    status,
    headers: {
      ...(contentType === "" ? {} : { "content-type": contentType }),
      // Bytes that are not gzip, labelled gzip.
      ...(gzipLabel ? { "content-encoding": "gzip" } : {}),
    },
    steps,
    end,
  }));
}

/**
 * `count` refusals of a legacy initialize: status 400 (which the gateway reads to see whether the upstream speaks
 * only 2026-07-28) with a body of any of the steps, labelled as JSON, an event stream or compressed, that ends, is
 * cut, goes silent or never ends.
 */
export function refusalScripts(seed: number, count: number): SseScript[] {
  const arb = fc.record({
    contentType: fc.constantFrom("application/json", "text/event-stream", "text/plain", ""),
    encoding: fc.constantFrom(undefined, undefined, "gzip", "br", "deflate", "x-unknown"),
    steps: fc.array(step, { maxLength: 4 }),
    end: fc.constantFrom<SseEnd>("end", "cut", "silent", "trickle"),
  });
  return fc.sample(arb, { seed, numRuns: count }).map(({ contentType, encoding, steps, end }) => ({
    label: `refused initialize, ${END_LABEL[end]}`,
    status: 400,
    headers: {
      ...(contentType === "" ? {} : { "content-type": contentType }),
      ...(encoding === undefined ? {} : { "content-encoding": encoding }),
    },
    steps,
    end,
  }));
}

/** One line longer than the gateway's largest event (16 MiB): the parser must refuse it in bounded memory. */
export function overLimitScript(limit: number): SseScript {
  return {
    label: "one line over the event limit",
    status: 200,
    headers: { "content-type": "text/event-stream" },
    steps: [{ kind: "huge line", size: limit + 1, terminated: true }, { kind: "answer" }],
    end: "end",
  };
}

const ev = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

async function write(res: ServerResponse, chunk: string | Buffer): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (!res.write(chunk)) {
    await new Promise<void>((resolve) => {
      const go = (): void => {
        res.off("drain", go);
        res.off("close", go);
        resolve();
      };
      res.on("drain", go);
      res.on("close", go);
    });
  }
  return !res.destroyed;
}

async function runStep(res: ServerResponse, s: SseStep, id: unknown): Promise<boolean> {
  switch (s.kind) {
    case "answer":
      return write(res, ev({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "scripted" }] } }));
    case "answer with another id":
      return write(res, ev({ jsonrpc: "2.0", id: `not-${String(id)}`, result: {} }));
    case "notification":
      return write(
        res,
        ev({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "a log line" } }),
      );
    case "server request":
      return write(
        res,
        ev({
          jsonrpc: "2.0",
          id: "upstream-asks",
          method: "elicitation/create",
          params: { message: "?", requestedSchema: { type: "object", properties: {} } },
        }),
      );
    case "event without data":
      return write(res, "event: message\n\n");
    case "id without data":
      return write(res, "id: 42\n\n");
    case "huge line": {
      if (!(await write(res, "data: "))) return false;
      const piece = Buffer.alloc(65_536, "x");
      for (let left = s.size; left > 0; left -= piece.length) {
        if (!(await write(res, left >= piece.length ? piece : piece.subarray(0, left)))) return false;
      }
      return s.terminated ? write(res, "\n\n") : true;
    }
    case "invalid UTF-8":
      return write(
        res,
        Buffer.concat([
          Buffer.from(`data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"text":"`),
          Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0xf4, 0x90]),
          Buffer.from(`"}}\n\n`),
        ]),
      );
    case "data not JSON":
      return write(res, "data: {not json\n\n");
    case "JSON not JSON-RPC":
      return write(res, 'data: [1,2,3]\n\ndata: null\n\ndata: {"jsonrpc":"2.0"}\n\n');
    case "comment":
      return write(res, ": a comment\n");
    case "bad retry":
      return write(res, "retry: soon\nretry: -5\n\n");
    case "CR line endings":
      return write(res, `event: message\rdata: ${JSON.stringify({ jsonrpc: "2.0", id, result: {} })}\r\r`);
    case "stop mid-event":
      return write(res, `data: {"jsonrpc":"2.0","id":`);
    case "random bytes":
      return write(res, Buffer.from(s.bytes));
    case "wait":
      await new Promise((resolve) => setTimeout(resolve, s.ms));
      return !res.destroyed;
  }
}

async function play(res: ServerResponse, script: SseScript, id: unknown): Promise<void> {
  res.writeHead(script.status, { ...script.headers, [UPSTREAM_MARK]: "1" });
  res.flushHeaders();
  for (const s of script.steps) {
    if (!(await runStep(res, s, id))) return;
  }
  switch (script.end) {
    case "end":
      res.end();
      return;
    case "cut":
      res.destroy();
      return;
    case "silent":
      // Left open: the gateway's upstream.idleTimeoutMs must end it, or the client leaving.
      return;
    case "trickle": {
      const timer = setInterval(() => {
        if (!res.destroyed) res.write(":\n");
      }, 100);
      timer.unref();
      res.once("close", () => clearInterval(timer));
      return;
    }
  }
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", [UPSTREAM_MARK]: "1", ...headers });
  res.end(JSON.stringify(body));
}

export interface SseUpstream {
  upstream: ScriptedUpstream;
  seenErrors: SeenErrors;
}

/**
 * The scripted upstream: a call naming script N (tool `script_N`, or the header `scriptHeader`) gets that script's
 * stream; everything else gets what a legacy SDK server answers (initialize, notifications, tools/list, the rest ok).
 */
export async function startSseUpstream(
  scripts: readonly SseScript[],
  scriptHeader: string,
  scriptTool: (n: number) => string,
): Promise<SseUpstream> {
  const seenErrors: SeenErrors = new Set();
  const noSession = { code: -32000, message: "Bad Request: No valid session ID provided" };
  seenErrors.add(noSession.message);
  const toolScript = new Map(scripts.map((_, n) => [scriptTool(n), n]));
  const upstream = await startScriptedUpstream((req, res, recorded) => {
    let message: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(recorded.body);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
        message = parsed as Record<string, unknown>;
    } catch {
      // not JSON: no script, no id
    }
    const params = (typeof message.params === "object" && message.params !== null ? message.params : {}) as Record<
      string,
      unknown
    >;
    const header = req.headers[scriptHeader];
    const n =
      typeof header === "string"
        ? Number(header)
        : message.method === "tools/call" && typeof params.name === "string"
          ? toolScript.get(params.name)
          : undefined;
    const id = message.id ?? null;
    const script = n === undefined ? undefined : scripts[n];
    if (script) return play(res, script, id);
    if (req.method === "GET") return answer(res, 405, { jsonrpc: "2.0", id: null, error: noSession });
    if (req.method === "DELETE") return answer(res, 200, {});
    if (message.method === undefined || !("id" in message)) {
      res.writeHead(202, { [UPSTREAM_MARK]: "1" });
      res.end();
      return;
    }
    switch (message.method) {
      case "initialize":
        return answer(
          res,
          200,
          {
            jsonrpc: "2.0",
            id,
            result: {
              protocolVersion: "2025-06-18",
              capabilities: { tools: { listChanged: true } },
              serverInfo: { name: "fuzz-sse", version: "1" },
            },
          },
          { "mcp-session-id": "fuzz-session" },
        );
      case "tools/list":
        return answer(res, 200, {
          jsonrpc: "2.0",
          id,
          result: { tools: [{ name: scriptTool(0), inputSchema: { type: "object" } }] },
        });
      case "server/discover":
        return answer(res, 400, { jsonrpc: "2.0", id: null, error: noSession });
      default:
        return answer(res, 200, { jsonrpc: "2.0", id, result: {} });
    }
  });
  return { upstream, seenErrors };
}
