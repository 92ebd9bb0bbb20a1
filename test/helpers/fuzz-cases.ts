// The requests of the fuzz run (test/integration/fuzz.test.ts), drawn with fast-check from a fixed seed: malformed
// bodies, headers and methods for a gateway in front of a real SDK upstream, raw bytes that fetch cannot send, and
// calls that make a scripted upstream answer with a malformed event stream (fuzz-upstreams.ts). Each group is a
// fixed number of cases drawn before the run, so a run is repeatable from its seed and costs the same every time.
import fc from "fast-check";
import type { SseScript } from "./fuzz-upstreams.js";

type Target = "sdk" | "sse";

/** A body: bytes, or a long one described and built only when sent (thousands of cases hold no megabytes). */
export type FuzzBody = Uint8Array | { prefix: string; fill: string; times: number; suffix: string };

export interface HttpCase {
  via: "http";
  group: string;
  target: Target;
  method: string;
  path: string;
  /** Name and value pairs, repeats kept; a value REAL_SESSION becomes a session id the upstream really holds. */
  headers: [string, string][];
  body?: FuzzBody | undefined;
}

export interface RawCase {
  via: "raw";
  group: string;
  target: Target;
  /** The request's bytes, given the Host header's value and a session id the upstream really holds. */
  build: (host: string, session: string) => Buffer;
  /** The client closes its sending side after the bytes (a request that stops short). */
  halfClose: boolean;
}

export type FuzzCase = HttpCase | RawCase;

export const REAL_SESSION = "<real-session>";
const MCP_ACCEPT = "application/json, text/event-stream";
const VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
const MODERN = "2026-07-28";
const METHODS = [
  "initialize",
  "ping",
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/read",
  "resources/templates/list",
  "resources/subscribe",
  "prompts/list",
  "prompts/get",
  "completion/complete",
  "logging/setLevel",
  "notifications/initialized",
  "notifications/cancelled",
  "notifications/progress",
  "tasks/get",
  "tasks/result",
  "tasks/list",
  "tasks/cancel",
  "tasks/update",
  "server/discover",
  "subscriptions/listen",
  "elicitation/create",
];
/** The SDK upstream's tools (examples/demo-server.ts), and names it does not have. */
const TOOLS = ["echo", "add", "slow_task", "ask_user", "fail", "throw_error", "notify", "nope", ""];

const printableChar = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
/** A header value fetch and undici send as it is: visible ASCII and spaces. */
const printable = (maxLength: number) => fc.string({ unit: printableChar, maxLength });
const token = fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{1,24}$/);

const jsonRpcId = fc.oneof(
  fc.integer(),
  fc.string({ maxLength: 24 }),
  fc.constant(null),
  fc.double(),
  fc.boolean(),
  fc.jsonValue({ maxDepth: 2 }),
);

const toolParams = fc.record(
  {
    name: fc.oneof(fc.constantFrom(...TOOLS), fc.string({ maxLength: 40 })),
    arguments: fc.oneof(
      fc.record({ text: fc.string({ maxLength: 200 }) }),
      fc.record({ a: fc.oneof(fc.integer(), fc.double()), b: fc.jsonValue({ maxDepth: 1 }) }),
      fc.record({ steps: fc.integer({ min: -3, max: 3 }), delayMs: fc.integer({ min: -10, max: 20 }) }),
      fc.jsonValue({ maxDepth: 3 }),
    ),
    task: fc.oneof(fc.record({ ttl: fc.oneof(fc.nat(), fc.double(), fc.string({ maxLength: 8 })) }), fc.jsonValue()),
    _meta: fc.oneof(fc.record({ progressToken: jsonRpcId }), fc.jsonValue({ maxDepth: 2 })),
  },
  { requiredKeys: ["name"] },
);

const initializeParams = fc.record(
  {
    protocolVersion: fc.oneof(fc.constantFrom(...VERSIONS), fc.string({ maxLength: 12 })),
    capabilities: fc.oneof(
      fc.constant({}),
      fc.record({ tasks: fc.jsonValue({ maxDepth: 2 }), elicitation: fc.jsonValue({ maxDepth: 1 }) }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    clientInfo: fc.oneof(
      fc.record({ name: fc.string({ maxLength: 20 }), version: fc.string({ maxLength: 8 }) }),
      fc.jsonValue({ maxDepth: 1 }),
    ),
  },
  { requiredKeys: [] },
);

const otherParams = fc.record(
  {
    uri: fc.oneof(fc.constantFrom("demo://readme", "demo://items/1", "file:///etc/passwd"), fc.string()),
    taskId: fc.oneof(fc.uuid(), fc.string({ maxLength: 40 })),
    cursor: fc.string({ maxLength: 40 }),
    level: fc.oneof(fc.constantFrom("debug", "info", "emergency"), fc.string({ maxLength: 10 })),
    requestId: jsonRpcId,
    progressToken: jsonRpcId,
    progress: fc.double(),
    inputResponses: fc.jsonValue({ maxDepth: 2 }),
    requestState: fc.string({ maxLength: 60 }),
  },
  { requiredKeys: [] },
);

/** A JSON-RPC message whose shape is right and whose content is anything: it gets past the parse to the routes. */
const plausibleMessage = fc
  .record({
    id: jsonRpcId,
    notification: fc.boolean(),
    method: fc.constantFrom(...METHODS),
    params: fc.oneof(toolParams, initializeParams, otherParams, fc.jsonValue({ maxDepth: 3 })),
  })
  .map(({ id, notification, method, params }) => ({
    jsonrpc: "2.0",
    ...(notification ? {} : { id }),
    method,
    params,
  }));

/** The headers of an ordinary MCP POST, sometimes on a session the upstream holds. */
const baseHeaders = fc
  .record({ session: fc.boolean(), version: fc.option(fc.constantFrom(...VERSIONS), { nil: undefined }) })
  .map(({ session, version }): [string, string][] => [
    ["content-type", "application/json"],
    ["accept", MCP_ACCEPT],
    ...(session ? ([["mcp-session-id", REAL_SESSION]] as [string, string][]) : []),
    ...(version === undefined ? [] : ([["mcp-protocol-version", version]] as [string, string][])),
  ]);

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

function post(group: string, target: Target, headers: [string, string][], body: FuzzBody): HttpCase {
  return { via: "http", group, target, method: "POST", path: "/mcp", headers, body };
}

function nested(depth: number, open: string, closed: boolean): string {
  const close = open === "[" ? "]" : "}";
  return open.repeat(depth) + "1" + (closed ? close.repeat(depth) : "");
}

/** Bodies: random bytes, truncated JSON, deep nesting, huge numbers, wrong types, batches, long strings. */
export function bodyCases(seed: number, count: number, maxBodyBytes: number): HttpCase[] {
  const body = fc.oneof(
    fc.uint8Array({ maxLength: 2048 }).map((b) => ({ group: "body: random bytes", body: b })),
    fc.tuple(plausibleMessage, fc.double({ min: 0, max: 1, noNaN: true })).map(([m, cut]) => {
      const text = JSON.stringify(m);
      return { group: "body: truncated JSON", body: utf8(text.slice(0, Math.floor(cut * text.length))) };
    }),
    fc
      .record({
        // Shallow, or as deep as the body limit allows (each level is its opener and its closer).
        depth: fc.oneof(
          fc.integer({ min: 1, max: 2_000 }).map((n) => ({ n })),
          fc.noBias(fc.integer({ min: 0, max: 1_000_000 })).map((ppm) => ({ ppm })),
        ),
        open: fc.constantFrom("[", '{"a":'),
        place: fc.constantFrom("top", "params", "arguments", "id", "_meta"),
        closed: fc.boolean(),
      })
      .map(({ depth: d, open, place, closed }) => {
        const deepest = Math.floor((maxBodyBytes - 200) / (open.length + 1));
        const depth = "n" in d ? d.n : 2_000 + Math.floor((d.ppm / 1_000_000) * (deepest - 2_000));
        const deep = nested(depth, open, closed);
        const text =
          place === "top"
            ? deep
            : place === "id"
              ? `{"jsonrpc":"2.0","id":${deep},"method":"ping"}`
              : place === "params"
                ? `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":${deep}}`
                : place === "_meta"
                  ? `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":${deep}}}`
                  : `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":${deep}}}}`;
        return { group: "body: deep nesting", body: utf8(text) };
      }),
    fc
      .record({
        where: fc.constantFrom("id", "jsonrpc", "progressToken", "ttl", "argument", "protocolVersion"),
        number: fc.oneof(
          fc.constantFrom(
            "1e309",
            "-1e309",
            "1e-400",
            "-0",
            "9007199254740993",
            "1.7976931348623157e308",
            "0.000000000000000000000000000000001",
            "00012",
            "1.",
            ".5",
            "+1",
            "0x10",
            "NaN",
            "Infinity",
            "1e999999999",
          ),
          fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }).map(String),
        ),
      })
      .map(({ where, number: n }) => {
        const text =
          where === "id"
            ? `{"jsonrpc":"2.0","id":${n},"method":"ping"}`
            : where === "jsonrpc"
              ? `{"jsonrpc":${n},"id":1,"method":"ping"}`
              : where === "progressToken"
                ? `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":${n}}}}`
                : where === "ttl"
                  ? `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"task":{"ttl":${n}}}}`
                  : where === "protocolVersion"
                    ? `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":${n},"capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`
                    : `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":${n},"b":${n}}}}`;
        return { group: "body: huge numbers", body: utf8(text) };
      }),
    fc
      .record(
        {
          jsonrpc: fc.oneof(fc.constantFrom("2.0", "1.0", 2, 2.0, "", null), fc.jsonValue({ maxDepth: 1 })),
          id: jsonRpcId,
          method: fc.oneof(fc.constantFrom(...METHODS), fc.jsonValue({ maxDepth: 1 }), fc.string({ maxLength: 30 })),
          params: fc.jsonValue({ maxDepth: 2 }),
          result: fc.jsonValue({ maxDepth: 1 }),
          error: fc.jsonValue({ maxDepth: 2 }),
        },
        { requiredKeys: [] },
      )
      .map((m) => ({ group: "body: wrong types", body: utf8(JSON.stringify(m)) })),
    fc
      .array(fc.oneof(plausibleMessage, fc.jsonValue({ maxDepth: 2 })), { maxLength: 50 })
      .map((batch) => ({ group: "body: batches", body: utf8(JSON.stringify(batch)) })),
    fc
      .record({
        beyond: fc.boolean(),
        size: fc.integer({ min: 1_000, max: maxBodyBytes * 3 }),
        where: fc.constantFrom("argument", "method", "id", "tool", "not JSON"),
      })
      .map(({ beyond, size, where }) => {
        // Within the limit: the body (with its 120-odd bytes of envelope) stays under it; beyond: over it.
        const times = beyond ? maxBodyBytes + (size % (maxBodyBytes * 2)) : Math.min(size, maxBodyBytes - 200);
        const [prefix, suffix] =
          where === "argument"
            ? ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"', '"}}}']
            : where === "method"
              ? ['{"jsonrpc":"2.0","id":1,"method":"', '"}']
              : where === "id"
                ? ['{"jsonrpc":"2.0","id":"', '","method":"ping"}']
                : where === "tool"
                  ? ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"', '","arguments":{}}}']
                  : ["", ""];
        return {
          group: beyond ? "body: long, beyond maxBodyBytes" : "body: long, within maxBodyBytes",
          body: { prefix, fill: where === "not JSON" ? "\u00e9" : "x", times, suffix },
        };
      }),
    plausibleMessage.map((m) => ({ group: "body: plausible messages", body: utf8(JSON.stringify(m)) })),
  );
  return fc
    .sample(fc.tuple(body, baseHeaders), { seed, numRuns: count })
    .map(([{ group, body: b }, headers]) => post(group, "sdk", headers, b));
}

/** A random header of the ones MCP gives meaning to, with a value fetch can send. */
const mcpHeader = fc.oneof(
  fc
    .oneof(
      fc.constantFrom(
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/json; charset=latin1",
        "text/plain",
        "text/event-stream",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "",
        "*/*",
      ),
      printable(60),
    )
    .map((v): [string, string] => ["content-type", v]),
  fc
    .oneof(fc.constantFrom(MCP_ACCEPT, "application/json", "text/event-stream", "*/*", "text/html", ""), printable(40))
    .map((v): [string, string] => ["accept", v]),
  fc
    .oneof(
      fc.constantFrom(...METHODS),
      printable(60),
      printable(8).map((v) => `=?base64?${v}?=`),
    )
    .map((v): [string, string] => ["mcp-method", v]),
  fc
    .oneof(
      fc.constantFrom(...TOOLS),
      printable(200),
      fc.base64String({ maxLength: 40 }).map((v) => `=?base64?${v}?=`),
      fc.constant("=?base64?????=?="),
    )
    .map((v): [string, string] => ["mcp-name", v]),
  fc.oneof(fc.constantFrom(...VERSIONS), printable(30)).map((v): [string, string] => ["mcp-protocol-version", v]),
  fc
    .oneof(
      fc.constant(REAL_SESSION),
      fc.uuid(),
      printable(64),
      fc.integer({ min: 1_000, max: 12_000 }).map((n) => "s".repeat(n)),
      fc.constant(""),
    )
    .map((v): [string, string] => ["mcp-session-id", v]),
  fc
    .oneof(
      fc.nat().map(String),
      printable(80),
      fc.integer({ min: 1_000, max: 8_000 }).map((n) => "9".repeat(n)),
    )
    .map((v): [string, string] => ["last-event-id", v]),
  fc
    .oneof(
      fc.constantFrom(
        "http://127.0.0.1:1",
        "http://localhost",
        "http://[::1]:8080",
        "https://evil.example",
        "null",
        "http://127.0.0.1.evil.example",
        "file://",
      ),
      printable(60),
    )
    .map((v): [string, string] => ["origin", v]),
  fc
    .oneof(
      printable(120).map((v) => `Bearer ${v}`),
      fc.constantFrom("Bearer", "Basic Zm9vOmJhcg==", "Bearer a.b.c", "Bearer eyJhbGciOiJub25lIn0.e30."),
      printable(80),
    )
    .map((v): [string, string] => ["authorization", v]),
  fc.tuple(token, printable(100)).map(([n, v]): [string, string] => [n, v]),
);

/** Headers: random MCP headers (repeated ones too) on a plausible or random body. */
export function headerCases(seed: number, count: number): HttpCase[] {
  const arb = fc.record({
    headers: fc.array(mcpHeader, { minLength: 1, maxLength: 10 }),
    duplicate: fc.array(mcpHeader, { maxLength: 3 }),
    keepBase: fc.boolean(),
    body: fc.oneof(
      plausibleMessage.map((m) => utf8(JSON.stringify(m))),
      fc.uint8Array({ maxLength: 200 }),
      fc.constant(
        utf8(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`),
      ),
    ),
  });
  return fc.sample(arb, { seed, numRuns: count }).map(({ headers, duplicate, keepBase, body }) => {
    const all: [string, string][] = [
      ...(keepBase
        ? ([
            ["content-type", "application/json"],
            ["accept", MCP_ACCEPT],
          ] as [string, string][])
        : []),
      ...headers,
      // The same names again with other values: every header a client may repeat, and some it may not.
      ...duplicate,
      ...duplicate.map(([n]): [string, string] => [n, "second"]),
    ];
    return post(duplicate.length > 0 ? "headers: repeated" : "headers: random", "sdk", all, body);
  });
}

/** Methods and paths: every verb on the MCP path, under it, and elsewhere. */
export function methodCases(seed: number, count: number): HttpCase[] {
  const arb = fc.record({
    method: fc.constantFrom("GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD", "POST"),
    path: fc.oneof(
      fc.constantFrom(
        "/mcp",
        "/mcp/",
        "/mcp/x",
        "/mcp/a/b/c",
        "/mcp?x=1&x=2",
        "/mcp/%2e%2e/healthz",
        "/mcp/..%2fmetrics",
        "/MCP",
        "/",
        "/unknown",
        "/healthz",
        "/readyz",
        "/metrics",
        "/status",
        "/status.json",
        "/.well-known/oauth-protected-resource",
        "/mcp/tasks",
        "//mcp",
      ),
      fc.webPath(),
    ),
    headers: fc.array(mcpHeader, { maxLength: 6 }),
    session: fc.boolean(),
    body: fc.option(fc.uint8Array({ maxLength: 300 }), { nil: undefined }),
  });
  return fc.sample(arb, { seed, numRuns: count }).map(({ method, path, headers, session, body }) => ({
    via: "http" as const,
    group: `methods: ${method}`,
    target: "sdk" as const,
    method,
    path: path.startsWith("/") ? path : `/${path}`,
    headers: [...headers, ...(session ? ([["mcp-session-id", REAL_SESSION]] as [string, string][]) : [])],
    body: method === "GET" || method === "HEAD" ? undefined : body,
  }));
}

const crlf = "\r\n";

/** Requests fetch cannot send: bad request lines, bytes a header may not hold, lying lengths, requests cut short. */
export function rawCases(seed: number, count: number): RawCase[] {
  const message = utf8(`{"jsonrpc":"2.0","id":1,"method":"ping"}`);
  const unicode = fc.string({ unit: "binary", minLength: 1, maxLength: 200 });
  const head = (lines: string[]) => Buffer.from(lines.join(crlf) + crlf + crlf, "utf8");
  const std = (host: string) => [`Host: ${host}`, "Content-Type: application/json", `Accept: ${MCP_ACCEPT}`];
  const arb = fc.oneof(
    // Header values outside what fetch allows: unicode (sent as UTF-8), control bytes.
    fc
      .record({
        name: fc.constantFrom(
          "Mcp-Session-Id",
          "Mcp-Name",
          "Mcp-Method",
          "MCP-Protocol-Version",
          "Last-Event-ID",
          "Origin",
          "Authorization",
        ),
        value: fc.oneof(
          unicode,
          fc.constantFrom("\u0001\u0002", "a\u007fb", "\u00ff\u00fe", "x\u0000y", "\ud83d\ude00 session"),
        ),
      })
      .map(({ name, value }) => ({
        group: "raw: unicode and control bytes in headers",
        halfClose: false,
        build: (host: string) =>
          Buffer.concat([
            head([
              `POST /mcp HTTP/1.1`,
              ...std(host),
              `${name}: ${value}`,
              `Content-Length: ${message.length}`,
              "Connection: close",
            ]),
            message,
          ]),
      })),
    // Lengths that disagree: repeated and conflicting Content-Length, both it and chunked, bad chunks, absurd sizes.
    fc
      .constantFrom(
        ["Content-Length: 5", "Content-Length: 50"],
        ["Content-Length: 40", "Content-Length: 40"],
        ["Content-Length: 40", "Transfer-Encoding: chunked"],
        ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
        ["Transfer-Encoding: gzip, chunked"],
        ["Content-Length: -1"],
        ["Content-Length: 99999999999999999999999"],
        ["Content-Length: 4x"],
        ["Content-Length: 1000"],
      )
      .map((lengths) => ({
        group: "raw: conflicting lengths",
        halfClose: true,
        build: (host: string) =>
          Buffer.concat([head([`POST /mcp HTTP/1.1`, ...std(host), ...lengths, "Connection: close"]), message]),
      })),
    fc
      .constantFrom(
        "zz\r\nabc\r\n0\r\n\r\n",
        "5\r\nab\r\n0\r\n\r\n",
        "ffffffffffffffff\r\n",
        "3;x=y\r\nabc\r\n",
        "0\r\n",
      )
      .map((chunks) => ({
        group: "raw: broken chunked bodies",
        halfClose: true,
        build: (host: string) =>
          Buffer.concat([
            head([`POST /mcp HTTP/1.1`, ...std(host), "Transfer-Encoding: chunked", "Connection: close"]),
            Buffer.from(chunks),
          ]),
      })),
    // A request that stops short: headers only, half a body, half a header block.
    fc.record({ cut: fc.integer({ min: 1, max: 200 }) }).map(({ cut }) => ({
      group: "raw: cut short",
      halfClose: true,
      build: (host: string) => {
        const whole = Buffer.concat([
          head([`POST /mcp HTTP/1.1`, ...std(host), `Content-Length: ${message.length}`]),
          message,
        ]);
        return whole.subarray(0, Math.min(cut, whole.length - 1));
      },
    })),
    // Request lines and header blocks that are not HTTP/1.1 as written.
    fc
      .oneof(
        fc.constantFrom(
          "GARBAGE",
          "POST /mcp HTTP/9.9",
          "post /mcp HTTP/1.1",
          "POST  /mcp  HTTP/1.1",
          "POST http://127.0.0.1/mcp HTTP/1.1",
          "OPTIONS * HTTP/1.1",
          "TRACE /mcp HTTP/1.1",
          "CONNECT 127.0.0.1:80 HTTP/1.1",
          "PROPFIND /mcp HTTP/1.1",
          "GET /mcp HTTP/1.0",
          "POST /mcp\u0000 HTTP/1.1",
          "POST /m\u00e9cp HTTP/1.1",
        ),
        fc.integer({ min: 9_000, max: 40_000 }).map((n) => `GET /mcp?${"q".repeat(n)} HTTP/1.1`),
      )
      .map((line) => ({
        group: "raw: request lines",
        halfClose: false,
        build: (host: string) =>
          Buffer.concat([
            head([line, ...std(host), `Content-Length: ${message.length}`, "Connection: close"]),
            message,
          ]),
      })),
    fc
      .constantFrom(
        ["NoColonHere"],
        [" folded: continuation"],
        ["X-A: 1", "\tfolded onto X-A"],
        [": empty name"],
        ["Bad Name: x"],
        ["Expect: 100-continue"],
        ["Upgrade: websocket", "Connection: Upgrade"],
        ["Upgrade: h2c", "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA", "Connection: Upgrade, HTTP2-Settings"],
        Array.from({ length: 300 }, (_, i) => `X-Many-${i}: ${i}`),
        [`X-Huge: ${"h".repeat(20_000)}`],
      )
      .map((extra) => ({
        group: "raw: header blocks",
        halfClose: false,
        build: (host: string) =>
          Buffer.concat([
            head([
              `POST /mcp HTTP/1.1`,
              ...std(host),
              ...extra,
              `Content-Length: ${message.length}`,
              "Connection: close",
            ]),
            message,
          ]),
      })),
    // Pipelined requests: two in one write, the second closing the connection.
    fc.constantFrom("ping", "tools/list", "initialize").map((method) => ({
      group: "raw: pipelined",
      halfClose: false,
      build: (host: string, session: string) => {
        const one = utf8(`{"jsonrpc":"2.0","id":1,"method":"${method}","params":{}}`);
        const req = (last: boolean) =>
          Buffer.concat([
            head([
              `POST /mcp HTTP/1.1`,
              ...std(host),
              `Mcp-Session-Id: ${session}`,
              `Content-Length: ${one.length}`,
              ...(last ? ["Connection: close"] : []),
            ]),
            one,
          ]);
        return Buffer.concat([req(false), req(true)]);
      },
    })),
    fc.uint8Array({ minLength: 1, maxLength: 600 }).map((bytes) => ({
      group: "raw: random bytes",
      halfClose: true,
      build: () => Buffer.from(bytes),
    })),
  );
  return fc.sample(arb, { seed, numRuns: count }).map((c) => ({ via: "raw" as const, target: "sdk" as const, ...c }));
}

/** How a call asks the scripted upstream for script N: in the tool's name, and in a header for other methods. */
export const scriptTool = (n: number): string => `script_${n}`;
export const SCRIPT_HEADER = "x-fuzz-script";

export type SseMode = "call" | "task" | "modern" | "initialize" | "list";

/**
 * A call through the gateway in front of the scripted upstream, answered with script n: a legacy tools/call
 * (passed through), the same as a 2025-11-25 task (run by the gateway), a 2026-07-28 tools/call (the era bridge
 * parses the stream), a legacy initialize or tools/list (passed through, or read to explain a refusal).
 */
export function sseCase(n: number, script: SseScript, mode: SseMode, id: string | number): HttpCase {
  const name = scriptTool(n);
  const json: [string, string][] = [
    ["content-type", "application/json"],
    ["accept", MCP_ACCEPT],
  ];
  const call = (extra: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: { n }, ...extra },
  });
  // A task is never asked of a stream that never ends: its call would outlive the run.
  const m = mode === "task" && script.end === "trickle" ? "call" : mode;
  const legacy: [string, string][] = [...json, [SCRIPT_HEADER, String(n)]];
  const onSession: [string, string][] = [...legacy, ["mcp-session-id", "fuzz-session"]];
  const modernMeta = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "fuzz", version: "1" },
  };
  const [headers, message]: [[string, string][], unknown] =
    m === "modern"
      ? [
          [...json, ["mcp-protocol-version", MODERN], ["mcp-method", "tools/call"], ["mcp-name", name]],
          call({ _meta: modernMeta }),
        ]
      : m === "task"
        ? [onSession, call({ task: { ttl: 2_000 } })]
        : m === "initialize"
          ? [
              legacy,
              {
                jsonrpc: "2.0",
                id,
                method: "initialize",
                params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "fuzz", version: "1" } },
              },
            ]
          : m === "list"
            ? [onSession, { jsonrpc: "2.0", id, method: "tools/list" }]
            : [onSession, call({})];
  return post(`sse: ${script.label} (${m})`, "sse", headers, utf8(JSON.stringify(message)));
}

/** One call per script, its mode and id drawn from `seed`. */
export function sseCases(seed: number, scripts: readonly SseScript[]): HttpCase[] {
  const arb = fc.record({
    mode: fc.constantFrom<SseMode>("call", "call", "task", "modern", "initialize", "list"),
    id: fc.oneof(fc.nat(), fc.string({ maxLength: 10 })),
  });
  return fc.sample(arb, { seed, numRuns: scripts.length }).map(({ mode, id }, n) => sseCase(n, scripts[n]!, mode, id));
}

/** The bytes of a body, built now if it was described. */
export function bodyBytes(body: FuzzBody): Uint8Array {
  if (body instanceof Uint8Array) return body;
  return Buffer.from(body.prefix + body.fill.repeat(body.times) + body.suffix, "utf8");
}
