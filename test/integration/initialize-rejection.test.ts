// A legacy client's initialize refused with HTTP 400: the gateway reads the refusal (at most 64 KiB) to see whether
// the upstream speaks only 2026-07-28. The refusal may be compressed, large, or a decompression bomb; the gateway
// must recognise a compressed modern-only refusal, relay any other refusal as the upstream sent it (bytes and
// Content-Encoding agreeing), say so when it could not read the whole refusal, and never inflate past its cap.
import { once } from "node:events";
import {
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  createBrotliCompress,
  createGzip,
  deflateRawSync,
  deflateSync,
  gunzipSync,
  gzipSync,
} from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";
import { legacyInitialize, rawRequest } from "../helpers/http.js";
import { jsonRpcOk, startScriptedUpstream, type ScriptedUpstream } from "../helpers/scripted-upstream.js";

const MODERN = "2026-07-28";

/** What the upstream answers a legacy initialize with (status 400), set per test. */
interface Refusal {
  body: Buffer;
  headers: Record<string, string>;
}

/** The SDK's answer to a legacy initialize on a modern-only server. */
const MODERN_ONLY_BODY = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  error: {
    code: -32022,
    message: "Unsupported protocol version",
    data: { supported: [MODERN], requested: "2025-06-18" },
  },
});

/** A plain 400 that is not about versions. */
const PLAIN_BODY = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  error: { code: -32600, message: "Bad Request: this server wants something else" },
});

/** `megabytes` MiB of zeros through a compressor fed 1 MiB at a time, so the test itself never holds them. */
async function bomb(compressor: NodeJS.ReadWriteStream, megabytes: number): Promise<Buffer> {
  const out: Buffer[] = [];
  compressor.on("data", (c: Buffer) => out.push(c));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < megabytes; i++) {
    if (!compressor.write(zeros)) await once(compressor, "drain");
  }
  compressor.end();
  await once(compressor, "end");
  return Buffer.concat(out);
}

/** A scripted upstream that refuses initialize with `refusal()` and answers server/discover as a modern server. */
function refusingUpstream(refusal: () => Refusal): Promise<ScriptedUpstream> {
  return startScriptedUpstream((req, res, recorded) => {
    const method = (JSON.parse(recorded.body || "{}") as { method?: string }).method;
    if (method === "initialize") {
      const { body, headers } = refusal();
      res.writeHead(400, { "content-length": String(body.byteLength), ...headers });
      res.end(body);
      return;
    }
    if (method === "server/discover") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: (JSON.parse(recorded.body) as { id: unknown }).id,
          result: {
            resultType: "complete",
            supportedVersions: [MODERN],
            capabilities: { tools: {} },
            serverInfo: { name: "scripted-modern", version: "1.0.0" },
          },
        }),
      );
      return;
    }
    return jsonRpcOk(req, res, recorded);
  });
}

/** The legacy initialize through node:http: the bytes as the gateway sent them, nothing decoded. */
function initializeRaw(gw: TestGateway) {
  const init = legacyInitialize({ "accept-encoding": "gzip, deflate, br" });
  return rawRequest(gw.url, {
    method: "POST",
    headers: init.headers as Record<string, string>,
    body: init.body as string,
  });
}

describe("a legacy initialize refused with a compressed, large or hostile 400", () => {
  // A gateway of its own for each test: once it has seen a modern-only refusal, a gateway serves every later
  // initialize itself.
  const started: { close(): Promise<unknown> }[] = [];
  afterEach(async () => {
    for (const s of started.splice(0).reverse()) await s.close();
  });
  async function refusedWith(refusal: Refusal): Promise<{ gw: TestGateway; upstream: ScriptedUpstream }> {
    const upstream = await refusingUpstream(() => refusal);
    started.push(upstream);
    const gw = await startTestGateway(upstream.url);
    started.push(gw);
    return { gw, upstream };
  }

  it("recognises a gzip-compressed modern-only refusal and serves the legacy session itself", async () => {
    const { gw, upstream } = await refusedWith({
      body: gzipSync(MODERN_ONLY_BODY),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    const res = await fetch(gw.url, legacyInitialize());
    const body = (await res.json()) as { result?: { protocolVersion?: string; serverInfo?: { name?: string } } };
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeTruthy();
    expect(body.result?.protocolVersion).toBe("2025-06-18");
    expect(body.result?.serverInfo?.name).toBe("scripted-modern");
    // The session was built from the upstream's server/discover, asked after the refusal.
    const methods = upstream.requests.map((r) => (JSON.parse(r.body || "{}") as { method?: string }).method);
    expect(methods).toEqual(["initialize", "server/discover"]);
  });

  it.each([
    ["deflate", "deflate", deflateSync],
    ["deflate (raw, as some servers send it)", "deflate", deflateRawSync],
    ["br", "br", brotliCompressSync],
  ] as const)("recognises a modern-only refusal compressed with %s", async (_name, coding, compress) => {
    const { gw } = await refusedWith({
      body: compress(Buffer.from(MODERN_ONLY_BODY)),
      headers: { "content-type": "application/json", "content-encoding": coding },
    });
    const res = await fetch(gw.url, legacyInitialize());
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeTruthy();
    await res.arrayBuffer();
  });

  it("relays a gzip-compressed plain 400 as the upstream sent it: the same bytes, labelled gzip, with their length", async () => {
    const compressed = gzipSync(PLAIN_BODY);
    const { gw } = await refusedWith({
      body: compressed,
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    const res = await initializeRaw(gw);
    expect(res.status).toBe(400);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(res.body.equals(compressed)).toBe(true);
    expect(res.headers["content-length"]).toBe(String(compressed.byteLength));
    expect(gunzipSync(res.body).toString("utf8")).toBe(PLAIN_BODY);
    // And as a fetch client reads it (it decodes gzip itself).
    const viaFetch = await fetch(gw.url, legacyInitialize());
    expect(viaFetch.status).toBe(400);
    expect(await viaFetch.text()).toBe(PLAIN_BODY);
  });

  it("relays an encoding it does not know untouched, without reading it as JSON", async () => {
    // Looks like a modern-only refusal if read as text, but its label says it is encoded in a way the gateway cannot decode.
    const body = Buffer.from(MODERN_ONLY_BODY);
    const { gw } = await refusedWith({
      body,
      headers: { "content-type": "application/json", "content-encoding": "x-unknown-coding" },
    });
    const res = await initializeRaw(gw);
    expect(res.status).toBe(400);
    expect(res.headers["content-encoding"]).toBe("x-unknown-coding");
    expect(res.body.equals(body)).toBe(true);
    expect(res.headers["content-length"]).toBe(String(body.byteLength));
  });

  it("answers a refusal over 64 KiB with its own error, not with the body cut short as if whole", async () => {
    const big = Buffer.from(
      JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32600, message: "x".repeat(100 * 1024) } }),
    );
    const { gw } = await refusedWith({ body: big, headers: { "content-type": "application/json" } });
    const res = await initializeRaw(gw);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.headers["content-encoding"]).toBeUndefined();
    const body = JSON.parse(res.body.toString("utf8")) as {
      id: unknown;
      error: { code: number; message: string; data: Record<string, unknown> };
    };
    expect(body.id).toBe(1);
    expect(body.error.code).toBe(-32603);
    expect(body.error.data).toMatchObject({ reason: "answer_too_large", limit: 64 * 1024, status: 400 });
    expect(body.error.message).toMatch(/refused initialize with HTTP 400/);
    expect(Number(res.headers["content-length"])).toBe(res.body.byteLength);
  });

  /** A refused initialize whose body is `body` sent as `encoding`, asked once: the answer, and how much RSS grew meanwhile. */
  async function refusedEncoded(body: Buffer, encoding: string) {
    const { gw } = await refusedWith({
      body,
      headers: { "content-type": "application/json", "content-encoding": encoding },
    });
    const before = process.memoryUsage().rss;
    const res = await initializeRaw(gw);
    return { res, grew: process.memoryUsage().rss - before };
  }

  it("never inflates a gzip bomb past 64 KiB, and relays it as it came (63 MiB in 64 KB)", async () => {
    // The most a gzip body under the 64 KiB read cap can inflate to is about 1032 times its size.
    const gz = await bomb(createGzip({ level: 9 }), 63);
    expect(gz.byteLength).toBeLessThan(64 * 1024);
    const { res, grew } = await refusedEncoded(gz, "gzip");
    expect(res.status).toBe(400);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(res.body.equals(gz)).toBe(true);
    expect(grew).toBeLessThan(32 * 1024 * 1024);
  });

  it("never inflates a brotli bomb past 64 KiB (100 MiB in a few hundred bytes)", async () => {
    const br = await bomb(createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }), 100);
    expect(br.byteLength).toBeLessThan(4096);
    const { res, grew } = await refusedEncoded(br, "br");
    expect(res.status).toBe(400);
    expect(res.headers["content-encoding"]).toBe("br");
    expect(res.body.equals(br)).toBe(true);
    expect(grew).toBeLessThan(32 * 1024 * 1024);
    // The relayed bytes are the bomb itself, whole (a bounded look shows it decodes as the upstream meant it).
    expect(() => brotliDecompressSync(res.body, { maxOutputLength: 1024 })).toThrow(/larger than/);
  });

  it("answers a gzip body inflating to 100 MiB (over 64 KiB compressed) with its own error, inflating nothing", async () => {
    const gz = await bomb(createGzip({ level: 9 }), 100);
    expect(gz.byteLength).toBeGreaterThan(64 * 1024);
    const { res, grew } = await refusedEncoded(gz, "gzip");
    expect(res.status).toBe(400);
    expect(res.headers["content-encoding"]).toBeUndefined();
    const body = JSON.parse(res.body.toString("utf8")) as { error: { data: { reason: string } } };
    expect(body.error.data.reason).toBe("answer_too_large");
    expect(grew).toBeLessThan(32 * 1024 * 1024);
  });
});

describe("a legacy initialize refused with a 400 whose body the upstream breaks", () => {
  it("answers 502 upstream_reset with the request's id, and logs no unhandled error", async () => {
    // Promises 100 bytes, sends 11, then resets the connection.
    const upstream = await startScriptedUpstream((_req, res) => {
      res.writeHead(400, { "content-type": "application/json", "content-length": "100" });
      res.write('{"jsonrpc":');
      setTimeout(() => res.destroy(), 20);
    });
    const lines: string[] = [];
    const gw = await startTestGateway(upstream.url, { logger: createLogger("warn", (line) => void lines.push(line)) });
    try {
      const res = await fetch(gw.url, legacyInitialize());
      const body = (await res.json()) as { id: unknown; error: { code: number; data: { reason: string } } };
      expect(res.status).toBe(502);
      expect(body.id).toBe(1);
      expect(body.error).toMatchObject({ code: -32603, data: { reason: "upstream_reset" } });
      const messages = lines.map((l) => (JSON.parse(l) as { level: string; msg: string }).msg);
      expect(messages).not.toContain("unhandled error");
      expect(messages).toContain("upstream stream broke");
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});

describe("a legacy initialize refused with a 400 whose body never ends", () => {
  it("answers 504 upstream_timeout once upstream.controlTimeoutMs has passed, and lets the upstream go", async () => {
    // A comment-sized write every 100 ms, for ever: no idle timeout fires, no 64 KiB cap is reached for minutes.
    const upstream = await startScriptedUpstream((_req, res) => {
      res.writeHead(400, { "content-type": "application/json" });
      const timer = setInterval(() => res.write(" "), 100);
      res.once("close", () => clearInterval(timer));
    });
    const gw = await startTestGateway(upstream.url, { upstream: { controlTimeoutMs: 500 } });
    try {
      const started = performance.now();
      const res = await fetch(gw.url, { ...legacyInitialize(), signal: AbortSignal.timeout(5_000) });
      const body = (await res.json()) as { id: unknown; error: { code: number; data: { reason: string } } };
      expect(res.status).toBe(504);
      expect(body.id).toBe(1);
      expect(body.error).toMatchObject({ code: -32603, data: { reason: "upstream_timeout" } });
      expect(performance.now() - started).toBeLessThan(4_000);
      expect(await upstream.requests[0]!.closed).toEqual({ aborted: true });
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
