// A recording HTTP proxy in front of one origin (in the security tests: a replica's internal listener, named as
// that replica's server.advertiseUrl, so other replicas forward to it through the proxy). Every request passes
// through unchanged and its answer streams back; what the request carried (method, path, headers as sent, body)
// is kept, so a test can send it again, verbatim or altered, straight at the origin (sendRaw).
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface CapturedRequest {
  method: string;
  /** Path and query, as the request line gave them. */
  path: string;
  /** The headers in the order and spelling they were sent (Node's rawHeaders: name, value, name, value…). */
  rawHeaders: string[];
  /** The same headers, lowercased names. */
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface CaptureProxy {
  /** http://127.0.0.1:PORT */
  origin: string;
  /** Every request that came through, in arrival order. */
  captured: CapturedRequest[];
  close(): Promise<void>;
}

/** Connection-level headers: not passed on by the proxy (the request's own are recorded as they came). */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te"]);

function withoutHopByHop(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (!HOP_BY_HOP.has(name.toLowerCase()) && name.toLowerCase() !== "content-length")
      out.push(name, raw[i + 1] as string);
  }
  return out;
}

/** A proxy on 127.0.0.1 (port 0) to `target` (an origin, http://host:port). */
export async function startCaptureProxy(target: string): Promise<CaptureProxy> {
  const { hostname, port } = new URL(target);
  const captured: CapturedRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.once("end", () => {
      const body = Buffer.concat(chunks);
      captured.push({
        method: req.method ?? "GET",
        path: req.url ?? "/",
        rawHeaders: [...req.rawHeaders],
        headers: req.headers,
        body,
      });
      const headers = withoutHopByHop(req.rawHeaders);
      if (body.length > 0 || req.method === "POST") headers.push("content-length", String(body.length));
      const out = httpRequest(
        { host: hostname, port: Number(port), method: req.method, path: req.url, headers, agent: false },
        (upRes) => {
          const back: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(upRes.headers))
            if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
          res.writeHead(upRes.statusCode ?? 502, back);
          res.flushHeaders();
          upRes.pipe(res);
          upRes.once("error", () => res.destroy());
        },
      );
      out.once("error", () => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      // The client leaving (a forwarded stream ended) ends the request to the origin too.
      res.once("close", () => {
        if (!res.writableFinished) out.destroy();
      });
      out.end(body);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port: own } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    origin: `http://127.0.0.1:${own}`,
    captured,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      })),
  };
}

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * Sends a request to `origin` exactly as given: the method, the path, the headers in their order and spelling
 * (Host included; Node adds none of its own but Connection), and the body. The whole answer is read.
 */
export async function sendRaw(
  origin: string,
  req: { method: string; path: string; rawHeaders: readonly string[]; body: Buffer | string },
): Promise<RawAnswer> {
  const { hostname, port } = new URL(origin);
  return await new Promise<RawAnswer>((resolve, reject) => {
    const out = httpRequest(
      {
        host: hostname,
        port: Number(port),
        method: req.method,
        path: req.path,
        headers: [...req.rawHeaders],
        setHost: false,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.once("error", reject);
        res.once("end", () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") });
          // A keep-alive header among the ones replayed would leave the connection open: the answer is whole.
          out.destroy();
        });
      },
    );
    out.setTimeout(30_000, () => out.destroy(new Error(`${req.method} ${origin}${req.path}: no answer within 30 s`)));
    out.once("error", reject);
    out.end(req.body);
  });
}
