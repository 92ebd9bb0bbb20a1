// A tiny node:http upstream whose answers a test scripts by hand. Only for what a
// real MCP peer cannot show or produce: raw request headers as they arrived, and
// faults (cut connections, silence, malformed SSE, long idle streams).
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Header names exactly as they arrived, lower-cased, in order (repeats kept). */
  headerNames: string[];
  body: string;
  /** Resolves when the response closes: `aborted` is true when it closed before it was finished. */
  closed: Promise<{ aborted: boolean }>;
}

export type ScriptedHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  recorded: RecordedRequest,
) => void | Promise<void>;

export interface ScriptedUpstream {
  /** http://127.0.0.1:PORT/mcp */
  url: string;
  requests: RecordedRequest[];
  /** Replaces the handler for the requests that follow. */
  setHandler(handler: ScriptedHandler): void;
  close(): Promise<void>;
}

export async function startScriptedUpstream(initial: ScriptedHandler): Promise<ScriptedUpstream> {
  let handler = initial;
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const closed = new Promise<{ aborted: boolean }>((resolve) => {
      res.once("close", () => resolve({ aborted: !res.writableFinished }));
    });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.once("end", () => {
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        headerNames: req.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase()),
        body: Buffer.concat(chunks).toString("utf8"),
        closed,
      };
      requests.push(recorded);
      Promise.resolve(handler(req, res, recorded)).catch(() => res.destroy());
    });
    req.once("error", () => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    setHandler: (h) => {
      handler = h;
    },
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** Answers every request with a fixed JSON-RPC result echoing the request id. */
export const jsonRpcOk: ScriptedHandler = (_req, res, recorded) => {
  let id: unknown = null;
  try {
    const parsed: unknown = JSON.parse(recorded.body);
    if (typeof parsed === "object" && parsed !== null && "id" in parsed) id = parsed.id;
  } catch {
    // not JSON: answer with id null
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { ok: true } }));
};

/** Opens an SSE response: status 200, text/event-stream, headers flushed at once. */
export function openSse(res: ServerResponse, extra: Record<string, string> = {}): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...extra });
  res.flushHeaders();
}

export function sseEvent(message: unknown, id?: string): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
