import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { upstreamSchema } from "../../src/config/schema.js";
import { META, MODERN_VERSION } from "../../src/protocol/modern-request.js";
import { UpstreamClient } from "../../src/upstream/client.js";
import { UpstreamEra } from "../../src/upstream/era-probe.js";
import {
  openSse,
  sseEvent,
  startScriptedUpstream,
  type ScriptedHandler,
  type ScriptedUpstream,
} from "../helpers/scripted-upstream.js";

const GATEWAY_INFO = { name: "mcp-task-gateway", version: "0.0.0-test" };

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function idOf(body: string): unknown {
  return (JSON.parse(body) as { id?: unknown }).id;
}

/** A modern upstream's discover answer. */
const modern: ScriptedHandler = (_req, res, rec) =>
  json(res, 200, {
    jsonrpc: "2.0",
    id: idOf(rec.body),
    result: {
      resultType: "complete",
      supportedVersions: [MODERN_VERSION],
      capabilities: {},
      ttlMs: 0,
      cacheScope: "private",
    },
  });

/** A legacy SDK 1.x upstream: no session yet, so it refuses anything but initialize. */
const legacy: ScriptedHandler = (_req, res) =>
  json(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: Server not initialized" } });

describe("UpstreamEra", () => {
  let up: ScriptedUpstream;
  let upstream: UpstreamClient;
  const signal = new AbortController().signal;

  beforeEach(async () => {
    up = await startScriptedUpstream(legacy);
    upstream = new UpstreamClient(upstreamSchema.parse({ url: up.url }));
  });
  afterEach(async () => {
    await upstream.close();
    await up.close();
  });

  it("a configured legacy era is returned without probing", async () => {
    expect(await new UpstreamEra(upstream, "legacy", GATEWAY_INFO).get([], signal)).toBe("legacy");
    expect(up.requests).toHaveLength(0);
  });

  it("a configured modern era stays modern, but discover is asked once to learn whether it serves tasks", async () => {
    up.setHandler(modern);
    const era = new UpstreamEra(upstream, "modern", GATEWAY_INFO);
    expect(await era.get([], signal)).toBe("modern");
    expect(await era.get([], signal)).toBe("modern");
    expect(up.requests).toHaveLength(1);
    expect(era.upstreamServesTasks).toBe(false);
  });

  it("auto probes server/discover with a modern envelope and the caller's credentials", async () => {
    up.setHandler(modern);
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    expect(await era.get(["authorization", "Bearer a"], signal)).toBe("modern");
    expect(up.requests).toHaveLength(1);
    const probe = up.requests[0];
    expect(probe?.method).toBe("POST");
    expect(probe?.headers["mcp-protocol-version"]).toBe(MODERN_VERSION);
    expect(probe?.headers["mcp-method"]).toBe("server/discover");
    expect(probe?.headers.authorization).toBe("Bearer a");
    expect(probe?.headers.accept).toBe("application/json, text/event-stream");
    expect(JSON.parse(probe?.body ?? "null")).toEqual({
      jsonrpc: "2.0",
      id: "gw-era-probe",
      method: "server/discover",
      params: {
        _meta: {
          [META.protocolVersion]: MODERN_VERSION,
          [META.clientCapabilities]: {},
          [META.clientInfo]: GATEWAY_INFO,
        },
      },
    });
  });

  it("caches the verdict: one probe for many requests, including concurrent ones", async () => {
    up.setHandler(modern);
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    const verdicts = await Promise.all([era.get([], signal), era.get([], signal), era.get([], signal)]);
    expect(verdicts).toEqual(["modern", "modern", "modern"]);
    expect(await era.get([], signal)).toBe("modern");
    expect(up.requests).toHaveLength(1);
  });

  it("a legacy upstream's error answer means legacy, and is cached too", async () => {
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    expect(await era.get([], signal)).toBe("legacy");
    expect(await era.get([], signal)).toBe("legacy");
    expect(up.requests).toHaveLength(1);
  });

  it("a 200 without our version in supportedVersions is legacy", async () => {
    up.setHandler((_req, res, rec) =>
      json(res, 200, { jsonrpc: "2.0", id: idOf(rec.body), result: { supportedVersions: ["2099-01-01"] } }),
    );
    expect(await new UpstreamEra(upstream, "auto", GATEWAY_INFO).get([], signal)).toBe("legacy");
  });

  it("reads a discover answered over SSE", async () => {
    up.setHandler((_req, res, rec) => {
      openSse(res);
      res.end(
        sseEvent({
          jsonrpc: "2.0",
          id: idOf(rec.body),
          result: { resultType: "complete", supportedVersions: [MODERN_VERSION] },
        }),
      );
    });
    expect(await new UpstreamEra(upstream, "auto", GATEWAY_INFO).get([], signal)).toBe("modern");
  });

  it("a network failure is not cached: the next request probes again", async () => {
    up.setHandler((_req, res) => {
      res.socket?.destroy();
    });
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    await expect(era.get([], signal)).rejects.toBeInstanceOf(Error);
    up.setHandler(modern);
    expect(await era.get([], signal)).toBe("modern");
    expect(await era.get([], signal)).toBe("modern");
    expect(up.requests).toHaveLength(2);
  });

  it("an unreachable upstream rejects, and is probed again later", async () => {
    await up.close();
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    await expect(era.get([], signal)).rejects.toBeInstanceOf(Error);
    await expect(era.get([], signal)).rejects.toBeInstanceOf(Error);
  });

  it("401/403 (no credentials yet) answers legacy for now but is not cached", async () => {
    up.setHandler((_req, res) => json(res, 401, { error: "unauthorized" }));
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    expect(await era.get([], signal)).toBe("legacy");
    // Nothing learned: the status page says unknown, not legacy.
    expect(era.known).toBeUndefined();
    expect(era.knownFrom).toBeUndefined();
    up.setHandler((_req, res) => json(res, 403, { error: "forbidden" }));
    expect(await era.get([], signal)).toBe("legacy");
    expect(era.known).toBeUndefined();
    up.setHandler(modern);
    expect(await era.get(["authorization", "Bearer ok"], signal)).toBe("modern");
    expect(await era.get([], signal)).toBe("modern");
    expect(up.requests).toHaveLength(3);
    expect(era.known).toBe("modern");
    expect(era.knownFrom).toBe("probe");
  });

  // BUG (reported): the shared probe runs under the first caller's AbortSignal, so when that
  // client disconnects, every concurrent request waiting on the same probe fails too.
  it("one caller leaving does not fail another caller waiting on the same probe", async () => {
    let answer: (() => Promise<void> | void) | undefined;
    up.setHandler((req, res, rec) => {
      answer = () => modern(req, res, rec);
    });
    const era = new UpstreamEra(upstream, "auto", GATEWAY_INFO);
    const leaving = new AbortController();
    const first = era.get([], leaving.signal).catch(() => "aborted");
    const second = era.get([], signal);
    while (up.requests.length === 0) await new Promise((r) => setImmediate(r));
    leaving.abort();
    expect(await first).toBe("aborted");
    await answer?.();
    expect(await second).toBe("modern");
  });
});
