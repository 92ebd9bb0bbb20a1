import { describe, expect, it } from "vitest";
import {
  CACHEABLE_METHODS,
  discoverFromInitialize,
  LEGACY_VERSION,
  legacyCapabilities,
  legacyParams,
  logPasses,
  modernError,
  modernOnlySupported,
  modernResult,
  MRTR_METHODS,
  parseInitializeResult,
  type CacheHints,
  type InitializeResult,
} from "../../src/protocol/era-translate.js";
import { upstreamModernOnly } from "../../src/protocol/errors.js";
import { TASKS_EXTENSION } from "../../src/protocol/tasks-extension.js";
import { LOG_LEVELS, META, MODERN_VERSION } from "../../src/protocol/modern-request.js";

const HINTS: CacheHints = { ttlMs: 1_234, cacheScope: "private" };
const SERVER_INFO = { name: "upstream", version: "9.9.9" };

function envelopeMeta(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    [META.protocolVersion]: MODERN_VERSION,
    [META.clientCapabilities]: { sampling: {} },
    [META.clientInfo]: { name: "c", version: "1" },
    [META.logLevel]: "info",
    ...extra,
  };
}

describe("legacyParams", () => {
  it("strips the envelope, MRTR fields and task, keeps other params and _meta keys, and sets the gateway token", () => {
    const params = {
      name: "echo",
      arguments: { text: "hi" },
      inputResponses: { k: { action: "accept" } },
      requestState: "opaque",
      task: { ttl: 1000 },
      _meta: envelopeMeta({ progressToken: 5, traceparent: "00-abc-def-01", tracestate: "x=y", "vendor/key": 1 }),
    };
    expect(legacyParams(params, "gw-1-progress")).toEqual({
      name: "echo",
      arguments: { text: "hi" },
      _meta: { traceparent: "00-abc-def-01", tracestate: "x=y", "vendor/key": 1, progressToken: "gw-1-progress" },
    });
  });

  it("drops the client's progress token when the gateway sets none, and _meta when nothing is left", () => {
    expect(legacyParams({ name: "echo", _meta: envelopeMeta({ progressToken: "client" }) }, undefined)).toEqual({
      name: "echo",
    });
  });

  it("adds _meta for the gateway token even when the client sent none", () => {
    expect(legacyParams({ uri: "file:///a" }, "tok")).toEqual({ uri: "file:///a", _meta: { progressToken: "tok" } });
  });

  it("ignores a non-object _meta", () => {
    expect(legacyParams({ name: "n", _meta: "junk" }, undefined)).toEqual({ name: "n" });
  });

  it("does not modify its input", () => {
    const params = { name: "echo", requestState: "s", _meta: envelopeMeta({ progressToken: 1 }) };
    const copy = structuredClone(params);
    legacyParams(params, "t");
    expect(params).toEqual(copy);
  });
});

describe("legacyCapabilities", () => {
  it("maps roots to {}, copies sampling, elicitation and experimental", () => {
    expect(
      legacyCapabilities({
        roots: { listChanged: true },
        sampling: { context: {}, tools: {} },
        elicitation: { form: {}, url: {} },
        experimental: { x: { y: 1 } },
      }),
    ).toEqual({
      roots: {},
      sampling: { context: {}, tools: {} },
      elicitation: { form: {}, url: {} },
      experimental: { x: { y: 1 } },
    });
  });

  it("keeps an empty elicitation declaration (form mode) as it is", () => {
    expect(legacyCapabilities({ elicitation: {} })).toEqual({ elicitation: {} });
  });

  it("drops the tasks extension but keeps other extensions", () => {
    expect(legacyCapabilities({ extensions: { [TASKS_EXTENSION]: {}, "com.example/ext": { a: 1 } } })).toEqual({
      extensions: { "com.example/ext": { a: 1 } },
    });
    expect(legacyCapabilities({ extensions: { [TASKS_EXTENSION]: {} } })).toEqual({});
  });

  it("never sends a legacy tasks capability and ignores unknown or malformed entries", () => {
    expect(legacyCapabilities({ tasks: { requests: {} }, roots: true, sampling: "yes", madeUp: {} })).toEqual({});
    expect(legacyCapabilities({})).toEqual({});
  });
});

describe("modernResult", () => {
  it("stamps resultType complete on every result, even a non-object one", () => {
    expect(modernResult("tools/call", { content: [] }, HINTS, undefined)).toEqual({
      content: [],
      resultType: "complete",
    });
    expect(modernResult("completion/complete", null, HINTS, undefined)).toEqual({ resultType: "complete" });
    expect(modernResult("tools/call", { resultType: "task" }, HINTS, undefined).resultType).toBe("complete");
  });

  it("adds cache hints only for cacheable methods", () => {
    for (const method of CACHEABLE_METHODS) {
      const r = modernResult(method, {}, HINTS, undefined);
      expect(r.ttlMs, method).toBe(1_234);
      expect(r.cacheScope, method).toBe("private");
    }
    for (const method of ["tools/call", "prompts/get", "completion/complete"]) {
      const r = modernResult(method, {}, HINTS, undefined);
      expect(r).not.toHaveProperty("ttlMs");
      expect(r).not.toHaveProperty("cacheScope");
    }
  });

  it("keeps valid upstream hints and replaces invalid ones", () => {
    expect(modernResult("tools/list", { tools: [], ttlMs: 0, cacheScope: "public" }, HINTS, undefined)).toMatchObject({
      ttlMs: 0,
      cacheScope: "public",
    });
    for (const ttlMs of [1.5, -1, "60", null]) {
      expect(modernResult("resources/read", { contents: [], ttlMs }, HINTS, undefined).ttlMs).toBe(1_234);
    }
    expect(modernResult("prompts/list", { prompts: [], cacheScope: "shared" }, HINTS, undefined).cacheScope).toBe(
      "private",
    );
  });

  it("strips tools[].execution.taskSupport but keeps the rest of execution", () => {
    const result = {
      tools: [
        { name: "a", inputSchema: {}, execution: { taskSupport: "optional", other: 1 } },
        { name: "b", inputSchema: {}, execution: { taskSupport: "required" } },
        { name: "c", inputSchema: {} },
        "weird",
      ],
    };
    const out = modernResult("tools/list", result, HINTS, undefined);
    expect(out.tools).toEqual([
      { name: "a", inputSchema: {}, execution: { other: 1 } },
      { name: "b", inputSchema: {}, execution: {} },
      { name: "c", inputSchema: {} },
      "weird",
    ]);
    // The input is untouched.
    expect(result.tools[0]).toEqual({ name: "a", inputSchema: {}, execution: { taskSupport: "optional", other: 1 } });
  });

  it("removes a legacy task field", () => {
    const out = modernResult("tools/call", { task: { taskId: "t", status: "working" }, content: [] }, HINTS, undefined);
    expect(out).not.toHaveProperty("task");
  });

  it("adds serverInfo to _meta without overwriting one the upstream set, keeping other _meta", () => {
    expect(modernResult("tools/call", { _meta: { k: 1 } }, HINTS, SERVER_INFO)._meta).toEqual({
      k: 1,
      [META.serverInfo]: SERVER_INFO,
    });
    const own = { name: "own", version: "1" };
    expect(modernResult("tools/call", { _meta: { [META.serverInfo]: own } }, HINTS, SERVER_INFO)._meta).toEqual({
      [META.serverInfo]: own,
    });
    expect(modernResult("tools/call", {}, HINTS, undefined)).not.toHaveProperty("_meta");
  });
});

describe("modernError", () => {
  it("maps -32002 (resource not found) to -32602 keeping message and data", () => {
    expect(modernError({ code: -32002, message: "Resource not found", data: { uri: "x" } })).toEqual({
      code: -32602,
      message: "Resource not found",
      data: { uri: "x" },
    });
  });

  it("leaves other codes alone", () => {
    for (const code of [-32601, -32602, -32603, -32000, -32042, 1]) {
      const e = { code, message: "m" };
      expect(modernError(e)).toBe(e);
    }
  });
});

describe("parseInitializeResult", () => {
  it("reads protocolVersion, capabilities, serverInfo and instructions", () => {
    expect(
      parseInitializeResult({
        protocolVersion: LEGACY_VERSION,
        capabilities: { tools: {} },
        serverInfo: SERVER_INFO,
        instructions: "hi",
      }),
    ).toEqual({
      protocolVersion: LEGACY_VERSION,
      capabilities: { tools: {} },
      serverInfo: SERVER_INFO,
      instructions: "hi",
    });
  });

  it("fills defaults for missing parts and rejects a result without a version", () => {
    expect(parseInitializeResult({ protocolVersion: "2025-06-18", instructions: 3 })).toEqual({
      protocolVersion: "2025-06-18",
      capabilities: {},
      serverInfo: { name: "upstream", version: "unknown" },
      instructions: undefined,
    });
    expect(parseInitializeResult({ capabilities: {} })).toBeUndefined();
    expect(parseInitializeResult("x")).toBeUndefined();
  });
});

describe("discoverFromInitialize", () => {
  const init: InitializeResult = {
    protocolVersion: LEGACY_VERSION,
    capabilities: {
      tools: { listChanged: true },
      resources: { subscribe: true },
      logging: {},
      tasks: { requests: { tools: { call: {} } } },
    },
    serverInfo: SERVER_INFO,
    instructions: "Use me well",
  };

  it("builds the discover result shape", () => {
    expect(discoverFromInitialize(init, HINTS, false)).toEqual({
      resultType: "complete",
      supportedVersions: [MODERN_VERSION],
      capabilities: { tools: { listChanged: true }, resources: { subscribe: true }, logging: {} },
      instructions: "Use me well",
      _meta: { [META.serverInfo]: SERVER_INFO },
      ttlMs: 1_234,
      cacheScope: "private",
    });
  });

  it("advertises the tasks extension as exactly {} only when asked", () => {
    const on = discoverFromInitialize(init, { ttlMs: 0, cacheScope: "public" }, true);
    expect(on.capabilities).toEqual({
      tools: { listChanged: true },
      resources: { subscribe: true },
      logging: {},
      extensions: { [TASKS_EXTENSION]: {} },
    });
    expect(on.ttlMs).toBe(0);
    expect(on.cacheScope).toBe("public");
  });

  it("keeps the upstream's other extensions, and adds tasks to them when advertised", () => {
    const withExt: InitializeResult = { ...init, capabilities: { extensions: { "com.example/x": { v: 1 } } } };
    expect(discoverFromInitialize(withExt, HINTS, false).capabilities).toEqual({
      extensions: { "com.example/x": { v: 1 } },
    });
    expect(discoverFromInitialize(withExt, HINTS, true).capabilities).toEqual({
      extensions: { "com.example/x": { v: 1 }, [TASKS_EXTENSION]: {} },
    });
  });

  it("omits instructions when the upstream gave none", () => {
    expect(discoverFromInitialize({ ...init, instructions: undefined }, HINTS, false)).not.toHaveProperty(
      "instructions",
    );
  });

  // BUG (reported): an upstream that itself declares extensions["io.modelcontextprotocol/tasks"]
  // keeps it in server/discover even when the gateway does not advertise tasks, so modern clients
  // would send tasks/* the gateway answers 404. Remove `.fails` once discoverFromInitialize deletes it.
  it("does not advertise the upstream's own tasks extension when the gateway does not", () => {
    const upstreamTasks: InitializeResult = { ...init, capabilities: { extensions: { [TASKS_EXTENSION]: { v: 1 } } } };
    expect(discoverFromInitialize(upstreamTasks, HINTS, false).capabilities).toEqual({});
  });
});

describe("logPasses", () => {
  it("passes nothing without a threshold", () => {
    for (const level of LOG_LEVELS) expect(logPasses(level, undefined)).toBe(false);
  });

  it("passes levels at or above the threshold, in RFC 5424 order", () => {
    expect(LOG_LEVELS).toEqual(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]);
    LOG_LEVELS.forEach((threshold, t) => {
      LOG_LEVELS.forEach((level, l) => {
        expect(logPasses(level, threshold), `${level} at ${threshold}`).toBe(l >= t);
      });
    });
  });

  it("rejects unknown or non-string levels", () => {
    expect(logPasses("verbose", "debug")).toBe(false);
    expect(logPasses(3, "debug")).toBe(false);
    expect(logPasses(undefined, "debug")).toBe(false);
  });
});

describe("method sets", () => {
  it("MRTR applies to tools/call, prompts/get and resources/read only", () => {
    expect([...MRTR_METHODS].sort()).toEqual(["prompts/get", "resources/read", "tools/call"]);
  });
});

describe("modernOnlySupported", () => {
  const refusal = (data: unknown): unknown => ({
    jsonrpc: "2.0",
    id: 1,
    error: { code: -32022, message: "Unsupported protocol version", data },
  });

  it("returns the versions of a modern-only upstream's -32022 refusal", () => {
    expect(modernOnlySupported(refusal({ supported: [MODERN_VERSION], requested: LEGACY_VERSION }))).toEqual([
      MODERN_VERSION,
    ]);
    expect(modernOnlySupported(refusal({ supported: [MODERN_VERSION, 7, "2099-01-01"] }))).toEqual([
      MODERN_VERSION,
      "2099-01-01",
    ]);
  });

  it("is undefined when the upstream also lists a legacy version, lists none, or it is another error", () => {
    expect(modernOnlySupported(refusal({ supported: [MODERN_VERSION, LEGACY_VERSION] }))).toBeUndefined();
    expect(modernOnlySupported(refusal({ supported: [] }))).toBeUndefined();
    expect(modernOnlySupported(refusal(undefined))).toBeUndefined();
    expect(modernOnlySupported({ error: { code: -32600, data: { supported: [MODERN_VERSION] } } })).toBeUndefined();
    expect(modernOnlySupported({ result: {} })).toBeUndefined();
    expect(modernOnlySupported("x")).toBeUndefined();
  });
});

/** The -32022 a legacy client gets in front of a modern-only upstream. */
const legacyClientRejected = (upstream: string, supported: string[], original: unknown) =>
  upstreamModernOnly(upstream, supported, original, MODERN_VERSION).error;

describe("legacyClientRejected", () => {
  it("is a -32022 naming the era mismatch, the upstream and both sides' versions", () => {
    const original = {
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32022, message: "m", data: { supported: [MODERN_VERSION], requested: "2025-06-18" } },
    };
    const e = legacyClientRejected("http://up.example/mcp", [MODERN_VERSION], original);
    expect(e.code).toBe(-32022);
    expect(e.message).toContain("http://up.example/mcp");
    expect(e.message).toContain(MODERN_VERSION);
    expect(e.message).toMatch(/legacy/i);
    expect(e.data).toEqual({ supported: [MODERN_VERSION], requested: "2025-06-18", reason: "upstream_modern_only" });
  });

  it("leaves requested undefined when the original error did not say", () => {
    expect(legacyClientRejected("u", [MODERN_VERSION], { error: { code: -32022 } }).data).toEqual({
      supported: [MODERN_VERSION],
      requested: undefined,
      reason: "upstream_modern_only",
    });
  });
});

describe("canonicalJson depth limit", () => {
  it("refuses values nested past the limit instead of exhausting the stack", async () => {
    const { canonicalJson, JsonTooDeepError, MAX_CANONICAL_DEPTH } = await import("../../src/protocol/json.js");
    let deep: unknown = 1;
    for (let i = 0; i < 6_000; i++) deep = [deep];
    expect(() => canonicalJson(deep)).toThrow(JsonTooDeepError);
    let ok: unknown = 1;
    for (let i = 0; i < MAX_CANONICAL_DEPTH; i++) ok = { k: ok };
    expect(canonicalJson(ok)).toMatch(/^\{"k":/);
  });
});
