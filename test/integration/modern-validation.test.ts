// Raw-HTTP checks of how the gateway validates MCP 2026-07-28 ("modern")
// requests (issue 3, item 2), in front of the SDK 1.x demo upstream (legacy).
//
// Order (issue 3; the spec lists the checks in the same order):
//   envelope (-32602, 400) → headers (-32020, 400) → version (-32022, 400) → method (-32601, 404).
// A request with several faults gets the first failing check. The SDK 2.x server
// checks the version before missing headers; on multi-fault requests the issue's
// order wins, so the differential block at the end only compares single faults.
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { SseParser } from "../../src/upstream/sse-parser.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT, serveMcpHandler, isRecord, rawRequest } from "../helpers/http.js";
import { META, MODERN_VERSION, modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { jsonRpcOk, startScriptedUpstream } from "../helpers/scripted-upstream.js";

const V = MODERN_VERSION;
const PV = META.protocolVersion;
const CAPS = META.clientCapabilities;
const INFO = META.clientInfo;
const LOG_LEVEL = META.logLevel;

const HEADER_MISMATCH = -32020;
const UNSUPPORTED_VERSION = -32022;
const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;

type Id = string | number;

/** A full, valid per-request envelope. */
function envelope(version = V): Record<string, unknown> {
  return modernMeta({ version });
}

/** Where `Mcp-Name` comes from, per method. */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

interface ModernOptions {
  /** Omit for a notification. */
  id?: Id;
  params?: Record<string, unknown>;
  /** Replaces the whole `_meta` (undefined keeps the valid envelope; `null` drops `_meta`). */
  meta?: unknown;
  /** Header overrides; an undefined value removes that header. */
  headers?: Record<string, string | undefined>;
}

interface Built {
  headers: Record<string, string>;
  body: string;
}

/** A modern request with everything right, unless `opts` breaks something. */
function modern(method: string, opts: ModernOptions = {}): Built {
  const params: Record<string, unknown> = { ...opts.params };
  if (opts.meta === undefined) params._meta = envelope();
  else if (opts.meta !== null) params._meta = opts.meta;
  const message: Record<string, unknown> = { jsonrpc: "2.0" };
  if (opts.id !== undefined) message.id = opts.id;
  message.method = method;
  message.params = params;

  const field = NAME_SOURCE[method];
  const nameValue = field === undefined ? undefined : params[field];
  const headers = modernHeaders(method, typeof nameValue === "string" ? nameValue : undefined, opts.headers);
  return { headers, body: JSON.stringify(message) };
}

const b64 = (s: string): string => `=?base64?${Buffer.from(s, "utf8").toString("base64")}?=`;

interface Answer {
  status: number;
  contentType: string;
  text: string;
  headers: Headers;
}

async function send(url: string, req: Built): Promise<Answer> {
  const res = await fetch(url, { method: "POST", headers: req.headers, body: req.body });
  return {
    status: res.status,
    contentType: res.headers.get("content-type") ?? "",
    text: await res.text(),
    headers: res.headers,
  };
}

/** The JSON-RPC messages in a JSON or SSE body (SSE parsed with the gateway's own parser). */
function messagesOf(a: Answer): unknown[] {
  if (a.contentType.startsWith("text/event-stream")) {
    const p = new SseParser();
    const events = [...p.push(Buffer.from(a.text, "utf8")), ...p.end()];
    return events.map((e) => JSON.parse(e.data) as unknown);
  }
  return [JSON.parse(a.text) as unknown];
}

/** The response (not a notification) to request `id`. */
function responseTo(a: Answer, id: Id): Record<string, unknown> {
  const found = messagesOf(a).find((m) => isRecord(m) && m.id === id && ("result" in m || "error" in m));
  if (!isRecord(found))
    throw new Error(`no response to id ${JSON.stringify(id)} in ${a.status} ${a.text.slice(0, 500)}`);
  return found;
}

interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** Asserts a plain JSON error answer with this status, code and echoed id; returns the error object. */
function expectError(a: Answer, status: number, code: number, id: Id | null): RpcError {
  const where = `${a.status} ${a.contentType} ${a.text.slice(0, 500)}`;
  expect(a.status, where).toBe(status);
  expect(a.contentType, where).toMatch(/^application\/json/);
  const body: unknown = JSON.parse(a.text);
  expect(body, where).toMatchObject({ jsonrpc: "2.0", id, error: { code, message: expect.any(String) } });
  if (!isRecord(body) || !isRecord(body.error)) throw new Error(`not a JSON-RPC error: ${where}`);
  expect("result" in body).toBe(false);
  return body.error as unknown as RpcError;
}

/** Asserts 200 and a `result.resultType` in the response to `id` (the request passed validation). */
function expectValidated(a: Answer, id: Id): Record<string, unknown> {
  const where = `${a.status} ${a.contentType} ${a.text.slice(0, 500)}`;
  expect(a.status, where).toBe(200);
  const msg = responseTo(a, id);
  expect(msg.error, where).toBeUndefined();
  expect(msg.result, where).toMatchObject({ resultType: expect.any(String) });
  return msg.result as Record<string, unknown>;
}

const fx = gatewayInFrontOf(startSdkUpstream, { beforeAll, afterAll });
const gw = (): string => fx.urls().gateway;

describe("envelope: -32602, HTTP 400", () => {
  it("clientCapabilities missing", async () => {
    const a = await send(gw(), modern("tools/list", { id: 1, meta: { [PV]: V } }));
    expectError(a, 400, INVALID_PARAMS, 1);
  });

  it("clientCapabilities not an object", async () => {
    const a = await send(gw(), modern("tools/list", { id: 2, meta: { [PV]: V, [CAPS]: "x" } }));
    expectError(a, 400, INVALID_PARAMS, 2);
  });

  it("protocolVersion claim present but not a string", async () => {
    const a = await send(gw(), modern("tools/list", { id: 3, meta: { [PV]: 20260728, [CAPS]: {} } }));
    expectError(a, 400, INVALID_PARAMS, 3);
  });

  it("protocolVersion missing while the MCP-Protocol-Version header names 2026-07-28", async () => {
    const a = await send(gw(), modern("tools/list", { id: 4, meta: { [CAPS]: {} } }));
    expectError(a, 400, INVALID_PARAMS, 4);
  });

  it("no _meta at all while the MCP-Protocol-Version header names 2026-07-28", async () => {
    const a = await send(gw(), modern("tools/list", { id: 5, meta: null }));
    expectError(a, 400, INVALID_PARAMS, 5);
  });

  it("_meta not an object while the header names 2026-07-28", async () => {
    const a = await send(gw(), modern("tools/list", { id: 6, meta: "nope" }));
    expectError(a, 400, INVALID_PARAMS, 6);
  });

  it("no params at all while the header names 2026-07-28", async () => {
    const headers = modern("tools/list").headers;
    const a = await send(gw(), { headers, body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }) });
    expectError(a, 400, INVALID_PARAMS, 7);
  });

  it("clientInfo present but malformed", async () => {
    const a = await send(gw(), modern("tools/list", { id: 8, meta: { ...envelope(), [INFO]: { name: 1 } } }));
    expectError(a, 400, INVALID_PARAMS, 8);
  });

  it("logLevel not one of the eight levels", async () => {
    const a = await send(gw(), modern("tools/list", { id: 9, meta: { ...envelope(), [LOG_LEVEL]: "verbose" } }));
    expectError(a, 400, INVALID_PARAMS, 9);
  });
});

describe("headers: -32020, HTTP 400", () => {
  it("MCP-Protocol-Version missing", async () => {
    const a = await send(gw(), modern("tools/list", { id: 10, headers: { "mcp-protocol-version": undefined } }));
    expectError(a, 400, HEADER_MISMATCH, 10);
  });

  it("MCP-Protocol-Version differs from the body's protocolVersion", async () => {
    const a = await send(gw(), modern("tools/list", { id: 11, headers: { "mcp-protocol-version": "2025-11-25" } }));
    expectError(a, 400, HEADER_MISMATCH, 11);
  });

  it("MCP-Protocol-Version names 2026-07-28 while the body claims another version (mismatch before version)", async () => {
    const a = await send(gw(), modern("tools/list", { id: 12, meta: envelope("2025-11-25") }));
    expectError(a, 400, HEADER_MISMATCH, 12);
  });

  it("Mcp-Method missing", async () => {
    const a = await send(gw(), modern("tools/list", { id: 13, headers: { "mcp-method": undefined } }));
    expectError(a, 400, HEADER_MISMATCH, 13);
  });

  it("Mcp-Method differs from the body's method", async () => {
    const a = await send(gw(), modern("tools/list", { id: 14, headers: { "mcp-method": "prompts/list" } }));
    expectError(a, 400, HEADER_MISMATCH, 14);
  });

  it("Mcp-Method compared case-sensitively", async () => {
    const a = await send(gw(), modern("tools/list", { id: 15, headers: { "mcp-method": "Tools/List" } }));
    expectError(a, 400, HEADER_MISMATCH, 15);
  });

  const nameCases: { method: string; params: Record<string, unknown>; other: string }[] = [
    { method: "tools/call", params: { name: "echo", arguments: { text: "x" } }, other: "add" },
    { method: "resources/read", params: { uri: "demo://readme" }, other: "demo://items/1" },
    { method: "prompts/get", params: { name: "greet", arguments: { name: "Ada" } }, other: "farewell" },
    { method: "tasks/get", params: { taskId: "task-1" }, other: "task-2" },
    { method: "tasks/update", params: { taskId: "task-1", inputResponses: {} }, other: "task-2" },
    { method: "tasks/cancel", params: { taskId: "task-1" }, other: "task-2" },
  ];
  for (const [i, c] of nameCases.entries()) {
    it(`Mcp-Name missing for ${c.method}`, async () => {
      const id = `name-missing-${i}`;
      const a = await send(gw(), modern(c.method, { id, params: c.params, headers: { "mcp-name": undefined } }));
      expectError(a, 400, HEADER_MISMATCH, id);
    });

    it(`Mcp-Name differs from the body for ${c.method}`, async () => {
      const id = `name-mismatch-${i}`;
      const a = await send(gw(), modern(c.method, { id, params: c.params, headers: { "mcp-name": c.other } }));
      expectError(a, 400, HEADER_MISMATCH, id);
    });

    it(`Mcp-Name base64-encoded as a different value for ${c.method}`, async () => {
      const id = `name-b64-mismatch-${i}`;
      const a = await send(gw(), modern(c.method, { id, params: c.params, headers: { "mcp-name": b64(c.other) } }));
      expectError(a, 400, HEADER_MISMATCH, id);
    });
  }

  it("Mcp-Name =?base64?…?= with a payload that is not base64", async () => {
    const a = await send(
      gw(),
      modern("tools/call", {
        id: 20,
        params: { name: "echo", arguments: { text: "x" } },
        headers: { "mcp-name": "=?base64?!!!?=" },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, 20);
  });

  it("Mcp-Name =?base64?…?= with non-canonical base64 (padding left off)", async () => {
    // "ZWNobw" is "echo" without its "==" padding.
    const a = await send(
      gw(),
      modern("tools/call", {
        id: 21,
        params: { name: "echo", arguments: { text: "x" } },
        headers: { "mcp-name": "=?base64?ZWNobw?=" },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, 21);
  });

  it("Mcp-Name =?base64?…?= whose payload is not UTF-8", async () => {
    const a = await send(
      gw(),
      modern("tools/call", {
        id: 22,
        params: { name: "echo", arguments: { text: "x" } },
        headers: { "mcp-name": "=?base64?/w==?=" },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, 22);
  });

  it("Mcp-Name with upper-case markers is not decoded (the markers are case-sensitive)", async () => {
    const upper = `=?BASE64?${Buffer.from("echo").toString("base64")}?=`;
    const a = await send(
      gw(),
      modern("tools/call", {
        id: 23,
        params: { name: "echo", arguments: { text: "x" } },
        headers: { "mcp-name": upper },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, 23);
  });

  it("an empty Mcp-Name for a non-empty body value", async () => {
    const a = await send(
      gw(),
      modern("resources/read", { id: 24, params: { uri: "demo://readme" }, headers: { "mcp-name": "" } }),
    );
    expectError(a, 400, HEADER_MISMATCH, 24);
  });
});

describe("Mcp-Name base64 sentinel that decodes correctly passes validation", () => {
  it("tools/call with the tool name base64-encoded", async () => {
    expect(b64("echo")).toBe("=?base64?ZWNobw==?=");
    const a = await send(
      gw(),
      modern("tools/call", {
        id: 30,
        params: { name: "echo", arguments: { text: "b64" } },
        headers: { "mcp-name": b64("echo") },
      }),
    );
    const result = expectValidated(a, 30);
    expect(result.content).toEqual([{ type: "text", text: "b64" }]);
  });

  it("resources/read with the URI base64-encoded", async () => {
    const a = await send(
      gw(),
      modern("resources/read", {
        id: 31,
        params: { uri: "demo://readme" },
        headers: { "mcp-name": b64("demo://readme") },
      }),
    );
    expectValidated(a, 31);
  });

  it("prompts/get with a non-ASCII name encoded is not a header error (the unknown prompt is answered in-band)", async () => {
    const a = await send(
      gw(),
      modern("prompts/get", { id: 32, params: { name: "grüße" }, headers: { "mcp-name": b64("grüße") } }),
    );
    expect(a.status, a.text).toBe(200);
    const msg = responseTo(a, 32);
    expect(msg, a.text).toHaveProperty("error");
    expect(msg.error).not.toMatchObject({ code: HEADER_MISMATCH });
  });
});

describe("version: -32022, HTTP 400", () => {
  for (const [i, version] of ["2099-01-01", "2025-11-25", "2025-06-18", "banana"].entries()) {
    it(`body and header both claim ${version}`, async () => {
      const id = 40 + i;
      const a = await send(
        gw(),
        modern("tools/list", { id, meta: envelope(version), headers: { "mcp-protocol-version": version } }),
      );
      const err = expectError(a, 400, UNSUPPORTED_VERSION, id);
      expect(err.data).toMatchObject({ supported: expect.arrayContaining([V]), requested: version });
      if (!isRecord(err.data)) throw new Error("data missing");
      expect(Array.isArray(err.data.supported) && err.data.supported.every((s) => typeof s === "string")).toBe(true);
    });
  }
});

describe("method: -32601, HTTP 404", () => {
  it("an unknown method", async () => {
    const a = await send(gw(), modern("foo/bar", { id: 50 }));
    expectError(a, 404, METHOD_NOT_FOUND, 50);
  });

  const legacyOnly: { method: string; params?: Record<string, unknown> }[] = [
    {
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    },
    { method: "ping" },
    { method: "logging/setLevel", params: { level: "debug" } },
    { method: "resources/subscribe", params: { uri: "demo://readme" } },
    { method: "resources/unsubscribe", params: { uri: "demo://readme" } },
    { method: "tasks/result", params: { taskId: "task-1" } },
    { method: "tasks/list" },
  ];
  for (const [i, c] of legacyOnly.entries()) {
    it(`${c.method} (legacy-only) on the modern path`, async () => {
      const id = `legacy-only-${i}`;
      const a = await send(gw(), modern(c.method, { id, params: c.params ?? {} }));
      expectError(a, 404, METHOD_NOT_FOUND, id);
    });
  }

  it("tasks/get with its headers right passes validation: the task engine answers (here -32021, the extension is not declared)", async () => {
    const a = await send(gw(), modern("tasks/get", { id: 51, params: { taskId: "task-1" } }));
    expectError(a, 400, -32021, 51);
  });
});

describe("multi-fault requests get the first failing check (envelope → headers → version → method)", () => {
  it("bad envelope + missing headers → -32602", async () => {
    const a = await send(
      gw(),
      modern("tools/list", {
        id: 60,
        meta: { [PV]: V },
        headers: { "mcp-method": undefined, "mcp-protocol-version": undefined },
      }),
    );
    expectError(a, 400, INVALID_PARAMS, 60);
  });

  it("bad envelope + version mismatch + unsupported version + unknown method → -32602", async () => {
    const a = await send(
      gw(),
      modern("foo/bar", { id: 61, meta: { [PV]: "2099-01-01" }, headers: { "mcp-protocol-version": "2025-11-25" } }),
    );
    expectError(a, 400, INVALID_PARAMS, 61);
  });

  it("missing Mcp-Method + unsupported version → -32020 (the SDK 2.x server says -32022 here)", async () => {
    const a = await send(
      gw(),
      modern("tools/list", {
        id: 62,
        meta: envelope("2099-01-01"),
        headers: { "mcp-protocol-version": "2099-01-01", "mcp-method": undefined },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, 62);
  });

  it("missing Mcp-Name + unsupported version → -32020", async () => {
    const a = await send(
      gw(),
      modern("tools/call", {
        id: 63,
        params: { name: "echo", arguments: { text: "x" } },
        meta: envelope("2099-01-01"),
        headers: { "mcp-protocol-version": "2099-01-01", "mcp-name": undefined },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, 63);
  });

  it("Mcp-Method mismatch + unknown method → -32020", async () => {
    const a = await send(gw(), modern("foo/bar", { id: 64, headers: { "mcp-method": "tools/list" } }));
    expectError(a, 400, HEADER_MISMATCH, 64);
  });

  it("missing Mcp-Name on tasks/cancel (not served yet) → -32020, not 404", async () => {
    const a = await send(
      gw(),
      modern("tasks/cancel", { id: 65, params: { taskId: "task-1" }, headers: { "mcp-name": undefined } }),
    );
    expectError(a, 400, HEADER_MISMATCH, 65);
  });

  it("unsupported version + unknown method → -32022", async () => {
    const a = await send(
      gw(),
      modern("foo/bar", { id: 66, meta: envelope("2099-01-01"), headers: { "mcp-protocol-version": "2099-01-01" } }),
    );
    expectError(a, 400, UNSUPPORTED_VERSION, 66);
  });

  it("unsupported version + legacy-only method (ping) → -32022", async () => {
    const a = await send(
      gw(),
      modern("ping", { id: 67, meta: envelope("2025-11-25"), headers: { "mcp-protocol-version": "2025-11-25" } }),
    );
    expectError(a, 400, UNSUPPORTED_VERSION, 67);
  });
});

describe("errors echo the request id", () => {
  const cases: { label: string; id: Id; build: (id: Id) => Built; status: number; code: number }[] = [
    {
      label: "-32602",
      id: "s-1",
      build: (id) => modern("tools/list", { id, meta: { [PV]: V } }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "-32020",
      id: "s-2",
      build: (id) => modern("tools/list", { id, headers: { "mcp-method": undefined } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "-32022",
      id: "s-3",
      build: (id) =>
        modern("tools/list", { id, meta: envelope("2099-01-01"), headers: { "mcp-protocol-version": "2099-01-01" } }),
      status: 400,
      code: UNSUPPORTED_VERSION,
    },
    { label: "-32601", id: "s-4", build: (id) => modern("ping", { id }), status: 404, code: METHOD_NOT_FOUND },
  ];
  for (const c of cases) {
    it(`${c.label} with a string id`, async () => {
      expectError(await send(gw(), c.build(c.id)), c.status, c.code, c.id);
    });
  }
  it("id 0 is echoed as 0", async () => {
    expectError(
      await send(gw(), modern("tools/list", { id: 0, headers: { "mcp-method": undefined } })),
      400,
      HEADER_MISMATCH,
      0,
    );
  });
  it("a large integer id is echoed", async () => {
    expectError(await send(gw(), modern("ping", { id: 9007199254740991 })), 404, METHOD_NOT_FOUND, 9007199254740991);
  });
});

describe("valid modern requests on served methods are not validation errors", () => {
  const served: { method: string; params?: Record<string, unknown> }[] = [
    { method: "server/discover" },
    { method: "tools/list" },
    { method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } },
    { method: "resources/list" },
    { method: "resources/read", params: { uri: "demo://readme" } },
    { method: "resources/templates/list" },
    { method: "prompts/list" },
    { method: "prompts/get", params: { name: "greet", arguments: { name: "Ada" } } },
  ];
  for (const [i, c] of served.entries()) {
    it(c.method, async () => {
      const id = 100 + i;
      expectValidated(await send(gw(), modern(c.method, { id, params: c.params ?? {} })), id);
    });
  }

  it("a string id (as the SDK's discover probe uses) is answered under that id", async () => {
    expectValidated(
      await send(gw(), modern("server/discover", { id: "server-discover-probe-1" })),
      "server-discover-probe-1",
    );
  });

  it("header names in any case are accepted (names are case-insensitive)", async () => {
    const body = modern("tools/call", { id: 120, params: { name: "echo", arguments: { text: "case" } } }).body;
    const r = await rawRequest(gw(), {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: MCP_ACCEPT,
        "MCP-PROTOCOL-VERSION": V,
        "MCP-Method": "tools/call",
        "MCP-NAME": "echo",
      },
      body,
    });
    const a: Answer = {
      status: r.status,
      contentType: String(r.headers["content-type"] ?? ""),
      text: r.body.toString("utf8"),
      headers: new Headers(),
    };
    expect(expectValidated(a, 120).content).toEqual([{ type: "text", text: "case" }]);
  });

  it("an Mcp-Session-Id on a modern request is ignored and none is minted or echoed", async () => {
    const a = await send(gw(), modern("tools/list", { id: 121, headers: { "mcp-session-id": "made-up-session" } }));
    expectValidated(a, 121);
    expect(a.headers.get("mcp-session-id")).toBeNull();
  });
});

describe("modern notifications", () => {
  it("a modern notification POST gets 202 with no body", async () => {
    const a = await send(
      gw(),
      modern("notifications/cancelled", { params: { requestId: 1 }, headers: { "mcp-method": undefined } }),
    );
    expect(a.status).toBe(202);
    expect(a.text).toBe("");
  });

  it("a notification with a matching Mcp-Method gets 202", async () => {
    const a = await send(gw(), modern("notifications/cancelled", { params: { requestId: "listen:0" } }));
    expect(a.status).toBe(202);
    expect(a.text).toBe("");
  });

  it("a notification made modern by the MCP-Protocol-Version header alone gets 202", async () => {
    const a = await send(
      gw(),
      modern("notifications/cancelled", { params: { requestId: 1 }, meta: null, headers: { "mcp-method": undefined } }),
    );
    expect(a.status).toBe(202);
    expect(a.text).toBe("");
  });

  it("a notification whose Mcp-Method disagrees with the body is rejected with -32020 (id null)", async () => {
    const a = await send(
      gw(),
      modern("notifications/cancelled", {
        params: { requestId: 1 },
        headers: { "mcp-method": "notifications/progress" },
      }),
    );
    expectError(a, 400, HEADER_MISMATCH, null);
  });
});

describe("legacy requests still pass through untouched", () => {
  it("a plain initialize (no claim, no header) reaches the upstream and its answer comes back as it was", async () => {
    const a = await send(gw(), {
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify(INIT_REQUEST),
    });
    expect(a.status, a.text).toBe(200);
    const sessionId = a.headers.get("mcp-session-id");
    expect(sessionId).toBeTruthy();
    const msg = responseTo(a, 1);
    expect(msg.result).toMatchObject({ protocolVersion: "2025-11-25", serverInfo: { name: "demo-upstream" } });
    expect(msg.result).not.toHaveProperty("resultType");

    // Session traffic after it (including a _meta without the claim) stays legacy too.
    const list = await send(gw(), {
      headers: {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        "mcp-session-id": String(sessionId),
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: { progressToken: 5 } } }),
    });
    expect(list.status, list.text).toBe(200);
    const listed = responseTo(list, 2);
    expect(listed.result).toMatchObject({ tools: expect.arrayContaining([expect.objectContaining({ name: "echo" })]) });
    expect(listed.result).not.toHaveProperty("resultType");
    expect(listed.result).not.toHaveProperty("ttlMs");
  });

  it("an initialize with MCP-Protocol-Version: 2025-11-25 stays legacy", async () => {
    const a = await send(gw(), {
      headers: { "content-type": "application/json", accept: MCP_ACCEPT, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ ...INIT_REQUEST, id: "init-2" }),
    });
    expect(a.status, a.text).toBe(200);
    expect(a.headers.get("mcp-session-id")).toBeTruthy();
    expect(responseTo(a, "init-2").result).toMatchObject({ serverInfo: { name: "demo-upstream" } });
  });

  it("a legacy request without a session is answered by the upstream, not by modern validation", async () => {
    // No claim and no modern header: the SDK 1.x upstream rejects it (no session), never -32020/-32602/-32022/-32601-404.
    const a = await send(gw(), {
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
    });
    expect(a.status).toBe(400);
    const body: unknown = JSON.parse(a.text);
    expect(body).toMatchObject({ error: { code: -32000 } });
  });
});

describe("legacy bytes reach the upstream unchanged", () => {
  const scripted = gatewayInFrontOf(() => startScriptedUpstream(jsonRpcOk), { beforeAll, afterAll });

  it("an initialize and a session request are forwarded byte for byte, and the upstream's answer comes back as is", async () => {
    const [upstream, gateway] = [scripted.upstream(), scripted.gateway()];
    const init = ` {"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}},"id":7,"method":"initialize","jsonrpc":"2.0"}\n`;
    const call = `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"é"},"_meta":{"progressToken":1}}}`;
    for (const [body, extra] of [
      [init, {}],
      [call, { "mcp-session-id": "s-1", "mcp-protocol-version": "2025-11-25" }],
    ] as const) {
      const res = await fetch(gateway.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT, ...extra },
        body,
      });
      expect(res.status).toBe(200);
      const answer: unknown = await res.json();
      expect(answer).toEqual({ jsonrpc: "2.0", id: JSON.parse(body).id as unknown, result: { ok: true } });
      const seen = upstream.requests.filter((r) => r.method === "POST" && r.body === body);
      expect(seen).toHaveLength(1);
    }
  });
});

// ---------------------------------------------------------------------------
// Differential: single-fault answers from the gateway and from the SDK 2.x
// server's own validation (createMcpHandler) must agree on HTTP status and code.

interface SdkServer {
  url: string;
  close(): Promise<void>;
}

async function startSdk2Server(): Promise<SdkServer> {
  const factory = (): McpServer => {
    const server = new McpServer(
      { name: "sdk2-oracle", version: "1.0.0" },
      { capabilities: { tools: {}, resources: {}, prompts: {} } },
    );
    server.registerTool("echo", { inputSchema: z.object({ text: z.string() }) }, ({ text }) => ({
      content: [{ type: "text", text }],
    }));
    server.registerResource("readme", "demo://readme", { mimeType: "text/plain" }, (uri) => ({
      contents: [{ uri: uri.href, text: "readme" }],
    }));
    server.registerPrompt("greet", { argsSchema: z.object({ name: z.string() }) }, ({ name }) => ({
      messages: [{ role: "user", content: { type: "text", text: `hello ${name}` } }],
    }));
    return server;
  };
  const handler = createMcpHandler(factory);
  return serveMcpHandler(handler);
}

describe("single faults agree with the SDK 2.x server", () => {
  let sdk: SdkServer | undefined;
  beforeAll(async () => {
    sdk = await startSdk2Server();
  });
  afterAll(async () => {
    await sdk?.close();
  });

  const echo = { name: "echo", arguments: { text: "x" } };
  const cases: { label: string; req: Built; status: number; code: number | null }[] = [
    {
      label: "clientCapabilities missing",
      req: modern("tools/list", { id: 1, meta: { [PV]: V } }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "clientCapabilities not an object",
      req: modern("tools/list", { id: 2, meta: { [PV]: V, [CAPS]: "x" } }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "no _meta, modern header",
      req: modern("tools/list", { id: 3, meta: null }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "protocolVersion not a string",
      req: modern("tools/list", { id: 31, meta: { [PV]: 20260728, [CAPS]: {} } }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "clientInfo malformed",
      req: modern("tools/list", { id: 32, meta: { ...envelope(), [INFO]: { name: 1 } } }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "logLevel not a level",
      req: modern("tools/list", { id: 33, meta: { ...envelope(), [LOG_LEVEL]: "verbose" } }),
      status: 400,
      code: INVALID_PARAMS,
    },
    {
      label: "MCP-Protocol-Version mismatch",
      req: modern("tools/list", { id: 4, headers: { "mcp-protocol-version": "2025-11-25" } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "MCP-Protocol-Version missing",
      req: modern("tools/list", { id: 5, headers: { "mcp-protocol-version": undefined } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Method missing",
      req: modern("tools/list", { id: 6, headers: { "mcp-method": undefined } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Method mismatch",
      req: modern("tools/list", { id: 7, headers: { "mcp-method": "prompts/list" } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name missing (tools/call)",
      req: modern("tools/call", { id: 8, params: echo, headers: { "mcp-name": undefined } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name mismatch (tools/call)",
      req: modern("tools/call", { id: 9, params: echo, headers: { "mcp-name": "other" } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name missing (resources/read)",
      req: modern("resources/read", { id: 10, params: { uri: "demo://readme" }, headers: { "mcp-name": undefined } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name mismatch (prompts/get)",
      req: modern("prompts/get", {
        id: 11,
        params: { name: "greet", arguments: { name: "A" } },
        headers: { "mcp-name": "x" },
      }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name invalid base64",
      req: modern("tools/call", { id: 12, params: echo, headers: { "mcp-name": "=?base64?!!!?=" } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name non-canonical base64",
      req: modern("tools/call", { id: 13, params: echo, headers: { "mcp-name": "=?base64?ZWNobw?=" } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name base64 not UTF-8",
      req: modern("tools/call", { id: 14, params: echo, headers: { "mcp-name": "=?base64?/w==?=" } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name with upper-case markers",
      req: modern("tools/call", {
        id: 34,
        params: echo,
        headers: { "mcp-name": `=?BASE64?${Buffer.from("echo").toString("base64")}?=` },
      }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name missing (tasks/get)",
      req: modern("tasks/get", { id: 35, params: { taskId: "task-1" }, headers: { "mcp-name": undefined } }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "Mcp-Name base64 ok",
      req: modern("tools/call", { id: 15, params: echo, headers: { "mcp-name": b64("echo") } }),
      status: 200,
      code: null,
    },
    {
      label: "unsupported version 2099-01-01",
      req: modern("tools/list", {
        id: 16,
        meta: envelope("2099-01-01"),
        headers: { "mcp-protocol-version": "2099-01-01" },
      }),
      status: 400,
      code: UNSUPPORTED_VERSION,
    },
    {
      label: "envelope claiming 2025-11-25",
      req: modern("tools/list", {
        id: 17,
        meta: envelope("2025-11-25"),
        headers: { "mcp-protocol-version": "2025-11-25" },
      }),
      status: 400,
      code: UNSUPPORTED_VERSION,
    },
    { label: "unknown method", req: modern("foo/bar", { id: 18 }), status: 404, code: METHOD_NOT_FOUND },
    { label: "ping", req: modern("ping", { id: 19 }), status: 404, code: METHOD_NOT_FOUND },
    {
      label: "logging/setLevel",
      req: modern("logging/setLevel", { id: 20, params: { level: "debug" } }),
      status: 404,
      code: METHOD_NOT_FOUND,
    },
    {
      label: "resources/subscribe",
      req: modern("resources/subscribe", { id: 21, params: { uri: "demo://readme" } }),
      status: 404,
      code: METHOD_NOT_FOUND,
    },
    {
      label: "initialize with an envelope",
      req: modern("initialize", {
        id: 22,
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } },
      }),
      status: 404,
      code: METHOD_NOT_FOUND,
    },
    {
      label: "tasks/result",
      req: modern("tasks/result", { id: 36, params: { taskId: "task-1" } }),
      status: 404,
      code: METHOD_NOT_FOUND,
    },
    { label: "tasks/list", req: modern("tasks/list", { id: 37 }), status: 404, code: METHOD_NOT_FOUND },
    {
      label: "notification with a mismatched Mcp-Method",
      req: modern("notifications/cancelled", {
        params: { requestId: 1 },
        headers: { "mcp-method": "notifications/progress" },
      }),
      status: 400,
      code: HEADER_MISMATCH,
    },
    {
      label: "notification",
      req: modern("notifications/cancelled", { params: { requestId: 1 }, headers: { "mcp-method": undefined } }),
      status: 202,
      code: null,
    },
  ];

  /** Status plus the JSON-RPC error code (null when the answer carries none). */
  async function outcome(url: string, req: Built): Promise<{ status: number; code: number | null }> {
    const a = await send(url, req);
    if (a.status === 202 || a.text === "") return { status: a.status, code: null };
    const msgs = messagesOf(a);
    const withError = msgs.find((m) => isRecord(m) && isRecord(m.error));
    const code =
      isRecord(withError) && isRecord(withError.error) && typeof withError.error.code === "number"
        ? withError.error.code
        : null;
    return { status: a.status, code };
  }

  for (const c of cases) {
    it(c.label, async () => {
      if (!sdk) throw new Error("not started");
      const [fromSdk, fromGateway] = await Promise.all([outcome(sdk.url, c.req), outcome(gw(), c.req)]);
      expect(fromSdk, "the SDK 2.x oracle").toEqual({ status: c.status, code: c.code });
      expect(fromGateway, "the gateway").toEqual(fromSdk);
    });
  }
});
