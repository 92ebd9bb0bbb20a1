// The steps forwarded-steps.ts gives a profile's samples to: each sample goes to the innermost frame on its stack
// that one of these rules names. The pipeline's steps are found by their `step("name", …)` line in the program
// the profile ran (dist/ or src/), so the rules need no line numbers of their own.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface Frame {
  functionName: string;
  url: string;
  /** 1-based. */
  lineNumber: number;
}

/** The steps in the order a forwarded request meets them, for the table. */
export const STEPS = [
  "HTTP server: request in (Node's parser, IncomingMessage)",
  "listener: lean-path check, @hono/node-server adaptor, Hono routing, Exchange",
  "origin",
  "method",
  "policy",
  "authenticate",
  "upstream view",
  "route",
  "body (read, JSON-RPC parse)",
  "parsed under policy",
  "session (routing: owner lookup)",
  "classify",
  "retired",
  "catalog",
  "rate limit",
  "access",
  "pinning",
  "pipeline glue (pipeline.ts, promises)",
  "forward step, session-routing forward, target lookup",
  "credential (mint: nonce, SHA-256, HMAC)",
  "headers for the owner (upstreamRequestHeaders)",
  "proxy handler (http/proxy.ts, own code)",
  "in-flight registry, Aborter",
  "undici: dispatch (api-request, pool, queue)",
  "undici: write to owner (writeH1, JS)",
  "kernel: writev to owner",
  "undici: read owner's answer (llhttp wasm, callbacks)",
  "relay: answer's headers (clientResponseHeaders, writeHead, NodeSink)",
  "relay: body pump and end (JS)",
  "kernel: writev to client",
  "Node HTTP: response finish, socket bookkeeping",
  "timers/immediates (event loop JS)",
  "(garbage collector)",
  "(program)",
  "(idle)",
];

/** `step("name"` lines per program file, read from the file the profile names. */
const stepLines = new Map<string, Map<number, string>>();
function stepAt(url: string, line: number): string | undefined {
  if (!url.startsWith("file://")) return undefined;
  let lines = stepLines.get(url);
  if (!lines) {
    lines = new Map();
    const path = fileURLToPath(url);
    if (existsSync(path))
      readFileSync(path, "utf8")
        .split("\n")
        .forEach((text, i) => {
          const m = /\bstep\("([^"]+)"/.exec(text);
          if (m) lines?.set(i + 1, m[1] as string);
        });
    stepLines.set(url, lines);
  }
  return lines.get(line);
}

const file = (url: string): string => /\/(?:dist|src)\/(.+)\.(?:js|ts)$/.exec(url)?.[1] ?? "";

/** The step of one frame, given the frames above it (callers, nearest first); undefined: ask its caller. */
function frameStep(f: Frame, callers: Frame[]): string | undefined {
  const { functionName: fn, url } = f;
  if (fn === "(idle)" || fn === "(garbage collector)" || fn === "(program)") return fn;
  if (fn === "writev" && url === "") {
    const toOwner = callers.some((c) => c.url.includes("undici"));
    return toOwner ? "kernel: writev to owner" : "kernel: writev to client";
  }
  const named = stepAt(url, f.lineNumber);
  if (named !== undefined) {
    if (named === "session") return "session (routing: owner lookup)";
    if (named === "body") return "body (read, JSON-RPC parse)";
    if (named === "forward") return "forward step, session-routing forward, target lookup";
    return named;
  }
  const where = file(url);
  switch (where) {
    case "replicas/forward-token":
      return "credential (mint: nonce, SHA-256, HMAC)";
    case "protocol/headers":
      return fn === "upstreamRequestHeaders" ? "headers for the owner (upstreamRequestHeaders)" : undefined;
    case "server/read-post":
    case "server/limited-body":
    case "protocol/jsonrpc":
      return "body (read, JSON-RPC parse)";
    case "replicas/session-routing":
      return fn === "forward"
        ? "forward step, session-routing forward, target lookup"
        : "session (routing: owner lookup)";
    case "replicas/forward":
      return "forward step, session-routing forward, target lookup";
    case "http/inflight":
    case "upstream/aborter":
      return "in-flight registry, Aborter";
    case "http/pump":
      return "relay: body pump and end (JS)";
    case "http/proxy":
      if (fn === "streamToNode" || fn === "clientResponseHeaders")
        return "relay: answer's headers (clientResponseHeaders, writeHead, NodeSink)";
      if (fn === "write" || fn === "end" || fn === "uncork" || fn === "flushHeaders")
        return "relay: body pump and end (JS)";
      return "proxy handler (http/proxy.ts, own code)";
    case "server/pipeline":
      return "pipeline glue (pipeline.ts, promises)";
    case "upstream/client":
      return "undici: dispatch (api-request, pool, queue)";
    case "endpoints/task-poll":
    case "gateway/listeners":
    case "server/app":
    case "server/exchange":
    case "server/node-server":
      return "listener: lean-path check, @hono/node-server adaptor, Hono routing, Exchange";
    default:
  }
  if (
    url.includes("@hono/node-server") ||
    url.includes("/hono/") ||
    /dist\/(index\.mjs|hono-base\.js|hono\.js)$/.test(url)
  )
    return "listener: lean-path check, @hono/node-server adaptor, Hono routing, Exchange";
  if (url.includes("undici")) {
    if (/client-h1/.test(url) && /write|Buffer|H1/i.test(fn)) return "undici: write to owner (writeH1, JS)";
    if (
      /client-h1|wasm/.test(url) ||
      url.startsWith("wasm") ||
      /readMore|execute|onHeaders|onData|onMessageComplete|onComplete/.test(fn)
    )
      return "undici: read owner's answer (llhttp wasm, callbacks)";
    return "undici: dispatch (api-request, pool, queue)";
  }
  if (url.startsWith("wasm://")) return "undici: read owner's answer (llhttp wasm, callbacks)";
  if (url === "node:_http_common" || url === "node:_http_incoming" || fn === "parserOnIncoming")
    return "HTTP server: request in (Node's parser, IncomingMessage)";
  if (url === "node:_http_server" || url === "node:_http_outgoing")
    return "Node HTTP: response finish, socket bookkeeping";
  if (url === "node:internal/timers") return "timers/immediates (event loop JS)";
  return undefined;
}

/** The step of a sample, from its stack (leaf first). */
export function stepOf(stack: Frame[]): string | undefined {
  for (let i = 0; i < stack.length; i++) {
    const s = frameStep(stack[i] as Frame, stack.slice(i + 1));
    if (s !== undefined) return s;
  }
  return undefined;
}
