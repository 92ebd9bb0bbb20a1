import { describe, expect, it } from "vitest";
import { HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION } from "../../src/protocol/errors.js";
import {
  classifyPost,
  decodeHeaderValue,
  isModernVersion,
  MCP_NAME_SOURCE,
  META,
  MODERN_METHODS,
  MODERN_VERSION,
  type Classification,
  type HeaderLookup,
  type ModernNotification,
  type ModernRequest,
  type Rejection,
} from "../../src/protocol/modern-request.js";

type Json = Record<string, unknown>;

/** A lookup like Node's parsed headers: names are matched lowercase only. */
function lookup(headers: Record<string, string> = {}): HeaderLookup & { asked: string[] } {
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const asked: string[] = [];
  const fn = (name: string): string | undefined => {
    asked.push(name);
    return lower.get(name);
  };
  return Object.assign(fn, { asked });
}

function envelope(extra: Json = {}): Json {
  return {
    [META.protocolVersion]: MODERN_VERSION,
    [META.clientCapabilities]: {},
    [META.clientInfo]: { name: "unit", version: "1.0.0" },
    ...extra,
  };
}

function modernBody(method: string, params: Json = {}, meta: Json = envelope(), id: string | number = 7): Json {
  return { jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } };
}

function modernHeaders(method: string, extra: Record<string, string> = {}): Record<string, string> {
  return { "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method, ...extra };
}

function rejection(c: Classification): Rejection {
  if (c.era !== "modern" || !("reject" in c)) throw new Error(`expected a rejection, got ${JSON.stringify(c)}`);
  return c.reject;
}

function accepted(c: Classification): ModernRequest | ModernNotification {
  if (c.era !== "modern" || !("message" in c))
    throw new Error(`expected an accepted modern message, got ${JSON.stringify(c)}`);
  return c.message;
}

function request(c: Classification): ModernRequest {
  const m = accepted(c);
  if (m.kind !== "request") throw new Error("expected a request");
  return m;
}

describe("isModernVersion", () => {
  it("accepts dated versions at or after 2026-07-28 and nothing else", () => {
    expect(isModernVersion("2026-07-28")).toBe(true);
    expect(isModernVersion("2099-01-01")).toBe(true);
    expect(isModernVersion("2025-11-25")).toBe(false);
    expect(isModernVersion("2026-07-27")).toBe(false);
    expect(isModernVersion("banana")).toBe(false);
    expect(isModernVersion("zzzz")).toBe(false);
    expect(isModernVersion("2026-07-28x")).toBe(false);
    expect(isModernVersion(undefined)).toBe(false);
  });
});

describe("classifyPost: era detection", () => {
  it("a claim in _meta makes a request modern even with an odd version (then the version rung answers)", () => {
    const c = classifyPost(
      modernBody("tools/list", {}, envelope({ [META.protocolVersion]: "banana" })),
      lookup(modernHeaders("tools/list", { "MCP-Protocol-Version": "banana" })),
    );
    const r = rejection(c);
    expect(r.error.code).toBe(UNSUPPORTED_PROTOCOL_VERSION);
    expect(r.error.data).toEqual({
      reason: "unsupported_protocol_version",
      supported: [MODERN_VERSION],
      requested: "banana",
    });
  });

  it("a claim in _meta makes a request modern even without any header", () => {
    const r = rejection(classifyPost(modernBody("tools/list"), lookup()));
    expect(r.error.code).toBe(HEADER_MISMATCH);
  });

  it("a modern MCP-Protocol-Version header alone makes a request modern (missing envelope)", () => {
    const c = classifyPost({ jsonrpc: "2.0", id: 1, method: "tools/list" }, lookup(modernHeaders("tools/list")));
    const r = rejection(c);
    expect(r.status).toBe(400);
    expect(r.id).toBe(1);
    expect(r.error.code).toBe(-32602);
    expect(r.error.data).toEqual({ reason: "invalid_envelope", envelope: { key: "_meta", problem: "missing" } });
  });

  it("a later dated header is modern too; a non-date header is not", () => {
    const later = classifyPost(
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      lookup({ "mcp-protocol-version": "2099-01-01" }),
    );
    expect(later.era).toBe("modern");
    const banana = classifyPost(
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      lookup({ "mcp-protocol-version": "banana" }),
    );
    expect(banana).toEqual({ era: "legacy" });
  });

  it("plain legacy requests stay legacy, with or without a legacy version header", () => {
    const body = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "echo", arguments: {} } };
    expect(classifyPost(body, lookup())).toEqual({ era: "legacy" });
    expect(classifyPost(body, lookup({ "mcp-protocol-version": "2025-11-25", "mcp-session-id": "s1" }))).toEqual({
      era: "legacy",
    });
    // Other _meta keys are not a claim.
    const withMeta = { ...body, params: { name: "echo", _meta: { progressToken: 1, traceparent: "00-x" } } };
    expect(classifyPost(withMeta, lookup({ "mcp-protocol-version": "2025-06-18" }))).toEqual({ era: "legacy" });
  });

  it("initialize and notifications/initialized stay legacy", () => {
    const init = {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } },
    };
    expect(classifyPost(init, lookup())).toEqual({ era: "legacy" });
    expect(
      classifyPost(
        { jsonrpc: "2.0", method: "notifications/initialized" },
        lookup({ "mcp-protocol-version": "2025-11-25" }),
      ),
    ).toEqual({
      era: "legacy",
    });
  });

  it("legacy batches and JSON-RPC responses are legacy session traffic", () => {
    const legacyCall = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    expect(classifyPost([legacyCall, { jsonrpc: "2.0", method: "notifications/x" }], lookup())).toEqual({
      era: "legacy",
    });
    expect(classifyPost([], lookup())).toEqual({ era: "legacy" });
    expect(classifyPost({ jsonrpc: "2.0", id: 5, result: {} }, lookup(modernHeaders("x")))).toEqual({ era: "legacy" });
    expect(classifyPost({ jsonrpc: "2.0", id: 5, error: { code: 1, message: "m" } }, lookup())).toEqual({
      era: "legacy",
    });
  });

  it("a batch smuggling a modern request is -32600/400 with id null", () => {
    const r = rejection(
      classifyPost([{ jsonrpc: "2.0", id: 1, method: "tools/list" }, modernBody("tools/list")], lookup()),
    );
    expect(r.status).toBe(400);
    expect(r.id).toBeNull();
    expect(r.error.code).toBe(-32600);
  });

  it("a modern message with a bad jsonrpc or id is -32600/400", () => {
    const noVersion = rejection(
      classifyPost({ ...modernBody("tools/list"), jsonrpc: "1.0" }, lookup(modernHeaders("tools/list"))),
    );
    expect(noVersion).toMatchObject({ status: 400, id: 7, error: { code: -32600 } });
    for (const id of [null, true, { a: 1 }, [1]]) {
      const r = rejection(classifyPost({ ...modernBody("tools/list"), id }, lookup(modernHeaders("tools/list"))));
      expect(r, JSON.stringify(id)).toMatchObject({ status: 400, id: null, error: { code: -32600 } });
    }
  });

  it("non-object bodies are legacy (the upstream judges them)", () => {
    for (const body of [null, 42, "tools/list", true, { method: 3 }]) {
      expect(classifyPost(body, lookup(modernHeaders("tools/list")))).toEqual({ era: "legacy" });
    }
  });
});

describe("classifyPost: a valid modern request", () => {
  it("carries the id, method, params and the parsed envelope", () => {
    const meta = envelope({ [META.logLevel]: "warning", progressToken: "p-1", traceparent: "00-abc" });
    const m = request(
      classifyPost(modernBody("tools/list", { cursor: "c" }, meta, "req-1"), lookup(modernHeaders("tools/list"))),
    );
    expect(m.id).toBe("req-1");
    expect(m.method).toBe("tools/list");
    expect(m.params.cursor).toBe("c");
    expect(m.envelope).toEqual({
      protocolVersion: MODERN_VERSION,
      clientCapabilities: {},
      clientInfo: { name: "unit", version: "1.0.0" },
      logLevel: "warning",
      progressToken: "p-1",
    });
  });

  it("clientInfo and logLevel are optional; a numeric progress token is kept, other types dropped", () => {
    const { [META.clientInfo]: _ci, ...noInfo } = envelope();
    const numeric = request(
      classifyPost(modernBody("tools/list", {}, { ...noInfo, progressToken: 9 }), lookup(modernHeaders("tools/list"))),
    );
    expect(numeric.envelope.clientInfo).toBeUndefined();
    expect(numeric.envelope.logLevel).toBeUndefined();
    expect(numeric.envelope.progressToken).toBe(9);
    const bogus = request(
      classifyPost(
        modernBody("tools/list", {}, envelope({ progressToken: { a: 1 } })),
        lookup(modernHeaders("tools/list")),
      ),
    );
    expect(bogus.envelope.progressToken).toBeUndefined();
  });

  it("serves every method of the 2026-07-28 surface", () => {
    for (const method of MODERN_METHODS) {
      const field = MCP_NAME_SOURCE[method];
      const params: Json = field === undefined ? {} : { [field]: "x" };
      const headers = field === undefined ? modernHeaders(method) : modernHeaders(method, { "Mcp-Name": "x" });
      expect(request(classifyPost(modernBody(method, params), lookup(headers))).method).toBe(method);
    }
  });

  it("asks the header lookup for lowercase names only", () => {
    const h = lookup(modernHeaders("tools/call", { "Mcp-Name": "echo" }));
    request(classifyPost(modernBody("tools/call", { name: "echo" }), h));
    expect(h.asked.length).toBeGreaterThan(0);
    for (const name of h.asked) expect(name).toBe(name.toLowerCase());
    expect(h.asked).toEqual(expect.arrayContaining(["mcp-protocol-version", "mcp-method", "mcp-name"]));
  });

  it("trims optional whitespace (SP/HTAB) around header values", () => {
    const headers = {
      "mcp-protocol-version": ` \t${MODERN_VERSION} `,
      "mcp-method": "\ttools/call ",
      "mcp-name": "  echo\t",
    };
    expect(request(classifyPost(modernBody("tools/call", { name: "echo" }), lookup(headers))).method).toBe(
      "tools/call",
    );
  });

  it("an era claim through a whitespace-padded header still counts", () => {
    const c = classifyPost(
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      lookup({ "mcp-protocol-version": ` ${MODERN_VERSION} ` }),
    );
    expect(c.era).toBe("modern");
  });
});

describe("classifyPost: envelope errors (-32602, 400, data.envelope)", () => {
  const cases: Array<[string, Json | string | number | null, string, string]> = [
    ["_meta is not an object", "nope", "_meta", "missing"],
    ["_meta is an array", [] as unknown as Json, "_meta", "missing"],
    [
      "protocolVersion is missing (header claims modern)",
      { [META.clientCapabilities]: {} },
      META.protocolVersion,
      "missing",
    ],
    [
      "protocolVersion is a number",
      { [META.protocolVersion]: 20260728, [META.clientCapabilities]: {} },
      META.protocolVersion,
      "must be a string",
    ],
    ["clientCapabilities is missing", { [META.protocolVersion]: MODERN_VERSION }, META.clientCapabilities, "missing"],
    [
      "clientCapabilities is not an object",
      { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: ["sampling"] },
      META.clientCapabilities,
      "must be an object",
    ],
    [
      "clientInfo lacks a version",
      { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: {}, [META.clientInfo]: { name: "x" } },
      META.clientInfo,
      "must be an object with string name and version",
    ],
    [
      "clientInfo is a string",
      { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: {}, [META.clientInfo]: "x" },
      META.clientInfo,
      "must be an object with string name and version",
    ],
    [
      "logLevel is not a level",
      { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: {}, [META.logLevel]: "verbose" },
      META.logLevel,
      "must be one of debug, info, notice, warning, error, critical, alert, emergency",
    ],
    [
      "logLevel is upper case",
      { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: {}, [META.logLevel]: "DEBUG" },
      META.logLevel,
      "must be one of debug, info, notice, warning, error, critical, alert, emergency",
    ],
  ];

  it.each(cases)("%s", (_title, meta, key, problem) => {
    const body = { jsonrpc: "2.0", id: "e-1", method: "tools/list", params: { _meta: meta } };
    const r = rejection(classifyPost(body, lookup(modernHeaders("tools/list"))));
    expect(r.status).toBe(400);
    expect(r.id).toBe("e-1");
    expect(r.error.code).toBe(-32602);
    expect(r.error.message).toBe(`Invalid _meta envelope for protocol revision ${MODERN_VERSION}: ${key}: ${problem}`);
    expect(r.error.data).toEqual({ reason: "invalid_envelope", envelope: { key, problem } });
  });

  it("params that are not an object count as a missing _meta", () => {
    const r = rejection(
      classifyPost({ jsonrpc: "2.0", id: 2, method: "tools/list", params: [1] }, lookup(modernHeaders("tools/list"))),
    );
    expect(r.error.data).toEqual({ reason: "invalid_envelope", envelope: { key: "_meta", problem: "missing" } });
  });
});

describe("classifyPost: header errors (-32020, 400)", () => {
  function headerReject(method: string, params: Json, headers: Record<string, string>): Rejection {
    const r = rejection(classifyPost(modernBody(method, params, envelope(), 11), lookup(headers)));
    expect(r.status).toBe(400);
    expect(r.id).toBe(11);
    expect(r.error.code).toBe(HEADER_MISMATCH);
    return r;
  }

  it("MCP-Protocol-Version missing", () => {
    const r = headerReject("tools/list", {}, { "mcp-method": "tools/list" });
    expect(r.error.data).toEqual({
      reason: "header_mismatch",
      mismatch: { header: "(missing)", body: MODERN_VERSION },
    });
  });

  it("MCP-Protocol-Version differs from the body claim", () => {
    const r = headerReject("tools/list", {}, { "mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list" });
    expect(r.error.data).toEqual({
      reason: "header_mismatch",
      mismatch: { header: "2025-11-25", body: MODERN_VERSION },
    });
    expect(r.error.message).toContain("2025-11-25");
  });

  it("Mcp-Method missing", () => {
    const r = headerReject("tools/list", {}, { "mcp-protocol-version": MODERN_VERSION });
    expect(r.error.data).toEqual({ reason: "header_mismatch", mismatch: { header: "(missing)", body: "tools/list" } });
  });

  it("Mcp-Method differs from the body method (values compare case-sensitively)", () => {
    const r = headerReject("tools/list", {}, modernHeaders("Tools/List"));
    expect(r.error.data).toEqual({ reason: "header_mismatch", mismatch: { header: "Tools/List", body: "tools/list" } });
  });

  it.each([
    ["tools/call", "name", "echo"],
    ["prompts/get", "name", "greeting"],
    ["resources/read", "uri", "file:///a.txt"],
    ["tasks/get", "taskId", "t-1"],
    ["tasks/update", "taskId", "t-2"],
    ["tasks/cancel", "taskId", "t-3"],
  ])("Mcp-Name is required for %s (from params.%s)", (method, field, value) => {
    expect(MCP_NAME_SOURCE[method]).toBe(field);
    const missing = headerReject(method, { [field]: value }, modernHeaders(method));
    expect(missing.error.data).toEqual({ reason: "header_mismatch", mismatch: { header: "(missing)", body: value } });
    const wrong = headerReject(method, { [field]: value }, modernHeaders(method, { "mcp-name": `${value}-other` }));
    expect(wrong.error.data).toEqual({
      reason: "header_mismatch",
      mismatch: { header: `${value}-other`, body: value },
    });
    const ok = classifyPost(
      modernBody(method, { [field]: value }),
      lookup(modernHeaders(method, { "mcp-name": value })),
      new Set([method]),
    );
    expect(request(ok).method).toBe(method);
  });

  it("Mcp-Name is not required when the body field is absent or not a string", () => {
    expect(request(classifyPost(modernBody("tools/call", {}), lookup(modernHeaders("tools/call")))).method).toBe(
      "tools/call",
    );
    expect(
      request(classifyPost(modernBody("tools/call", { name: 5 }), lookup(modernHeaders("tools/call")))).method,
    ).toBe("tools/call");
  });

  it("methods outside the table need no Mcp-Name, and one sent is ignored", () => {
    expect(
      request(classifyPost(modernBody("tools/list", { name: "x" }), lookup(modernHeaders("tools/list")))).method,
    ).toBe("tools/list");
    expect(
      request(classifyPost(modernBody("tools/list"), lookup(modernHeaders("tools/list", { "mcp-name": "whatever" }))))
        .method,
    ).toBe("tools/list");
  });

  it("a base64 Mcp-Name is decoded before comparing", () => {
    const name = "Hello, 世界";
    const encoded = `=?base64?${Buffer.from(name, "utf8").toString("base64")}?=`;
    expect(
      request(
        classifyPost(modernBody("tools/call", { name }), lookup(modernHeaders("tools/call", { "mcp-name": encoded }))),
      ).method,
    ).toBe("tools/call");
    expect(
      request(
        classifyPost(
          modernBody("tools/call", { name: "echo" }),
          lookup(modernHeaders("tools/call", { "mcp-name": "=?base64?ZWNobw==?=" })),
        ),
      ).method,
    ).toBe("tools/call");
  });

  it("a base64 Mcp-Name with an invalid payload is a mismatch naming the raw header", () => {
    const r = headerReject(
      "tools/call",
      { name: "echo" },
      modernHeaders("tools/call", { "mcp-name": "=?base64?!!!?=" }),
    );
    expect(r.error.data).toEqual({ reason: "header_mismatch", mismatch: { header: "=?base64?!!!?=", body: "echo" } });
    expect(r.error.message).toContain("invalid base64");
  });

  it("a base64 Mcp-Name that decodes to another value is a mismatch", () => {
    const r = headerReject(
      "tools/call",
      { name: "echo" },
      modernHeaders("tools/call", { "mcp-name": "=?base64?ZWNobzI=?=" }),
    );
    expect(r.error.data).toEqual({ reason: "header_mismatch", mismatch: { header: "echo2", body: "echo" } });
  });
});

describe("decodeHeaderValue", () => {
  it("returns a plain value as is", () => {
    expect(decodeHeaderValue("echo")).toBe("echo");
    expect(decodeHeaderValue("")).toBe("");
    expect(decodeHeaderValue("ZWNobw==")).toBe("ZWNobw==");
    expect(decodeHeaderValue("=?base64?ZWNobw==")).toBe("=?base64?ZWNobw==");
    expect(decodeHeaderValue("ZWNobw==?=")).toBe("ZWNobw==?=");
  });

  it("sentinel markers are case-sensitive: other cases are plain values", () => {
    expect(decodeHeaderValue("=?BASE64?ZWNobw==?=")).toBe("=?BASE64?ZWNobw==?=");
    expect(decodeHeaderValue("=?Base64?ZWNobw==?=")).toBe("=?Base64?ZWNobw==?=");
  });

  it("decodes canonical base64 of UTF-8", () => {
    expect(decodeHeaderValue("=?base64?ZWNobw==?=")).toBe("echo");
    expect(decodeHeaderValue("=?base64?SGVsbG8sIOS4lueVjA==?=")).toBe("Hello, 世界");
    expect(decodeHeaderValue("=?base64?IHBhZGRlZCA=?=")).toBe(" padded ");
    expect(decodeHeaderValue("=?base64?bGluZTEKbGluZTI=?=")).toBe("line1\nline2");
    expect(decodeHeaderValue("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")).toBe("=?base64?literal?=");
    expect(decodeHeaderValue("=?base64?YWJj?=")).toBe("abc");
    expect(decodeHeaderValue("=?base64??=")).toBe("");
  });

  it("rejects non-canonical base64: missing padding, url-safe alphabet, whitespace, bad length", () => {
    for (const payload of [
      "ZWNobw",
      "ZWNobw=",
      "ZWNobw===",
      "-_-_",
      "ZW Nobw==",
      "ZWNob",
      "!!!",
      "ZWNobw==\n",
      "Z=Nobw==",
    ]) {
      expect(decodeHeaderValue(`=?base64?${payload}?=`), payload).toBeUndefined();
    }
  });

  it("rejects payloads that are not valid UTF-8", () => {
    const invalid = Buffer.from([0xff, 0xfe, 0xfd]).toString("base64");
    expect(decodeHeaderValue(`=?base64?${invalid}?=`)).toBeUndefined();
    const lone = Buffer.from([0xc3]).toString("base64");
    expect(decodeHeaderValue(`=?base64?${lone}?=`)).toBeUndefined();
  });

  it("a sentinel too short to hold both markers is invalid, not a plain value", () => {
    // "=?base64?=" starts with the prefix and ends with "?=", sharing the "?".
    expect(decodeHeaderValue("=?base64?=")).toBeUndefined();
  });
});

describe("classifyPost: version and method", () => {
  it("an unsupported version is -32022/400 with data {supported, requested}", () => {
    for (const version of ["2099-01-01", "2025-11-25"]) {
      const r = rejection(
        classifyPost(
          modernBody("tools/list", {}, envelope({ [META.protocolVersion]: version })),
          lookup(modernHeaders("tools/list", { "MCP-Protocol-Version": version })),
        ),
      );
      expect(r.status).toBe(400);
      expect(r.id).toBe(7);
      expect(r.error.code).toBe(UNSUPPORTED_PROTOCOL_VERSION);
      expect(r.error.message).toBe(`Unsupported protocol version: ${version}`);
      expect(r.error.data).toEqual({
        reason: "unsupported_protocol_version",
        supported: [MODERN_VERSION],
        requested: version,
      });
    }
  });

  it.each(["ping", "initialize", "logging/setLevel", "resources/subscribe", "tasks/list", "tasks/get", "no/such"])(
    "%s is -32601 with HTTP 404",
    (method) => {
      const field = MCP_NAME_SOURCE[method];
      const params: Json = field === undefined ? {} : { [field]: "t" };
      const headers = field === undefined ? modernHeaders(method) : modernHeaders(method, { "mcp-name": "t" });
      const r = rejection(classifyPost(modernBody(method, params), lookup(headers)));
      expect(r.status).toBe(404);
      expect(r.id).toBe(7);
      expect(r.error).toEqual({
        code: -32601,
        message: `Method not found: ${method}`,
        data: { reason: "method_not_found" },
      });
    },
  );

  it("extraMethods adds methods to the surface", () => {
    const body = modernBody("tasks/get", { taskId: "t-9" });
    const headers = lookup(modernHeaders("tasks/get", { "mcp-name": "t-9" }));
    expect(rejection(classifyPost(body, headers)).status).toBe(404);
    const m = request(classifyPost(body, headers, new Set(["tasks/get"])));
    expect(m.method).toBe("tasks/get");
    expect(m.params.taskId).toBe("t-9");
  });
});

describe("classifyPost: notifications", () => {
  it("a modern notification is accepted (the 202 path) without any header requirement", () => {
    const note = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 4, _meta: envelope() } };
    const m = accepted(classifyPost(note, lookup()));
    expect(m).toEqual({ kind: "notification", method: "notifications/cancelled", params: note.params });
  });

  it("a modern header alone makes a notification modern, even with no params", () => {
    const m = accepted(
      classifyPost(
        { jsonrpc: "2.0", method: "notifications/cancelled" },
        lookup({ "mcp-protocol-version": MODERN_VERSION }),
      ),
    );
    expect(m).toEqual({ kind: "notification", method: "notifications/cancelled", params: {} });
  });

  it("a notification is not checked for its envelope", () => {
    const note = {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { _meta: { [META.protocolVersion]: 5 } },
    };
    expect(accepted(classifyPost(note, lookup())).kind).toBe("notification");
  });

  it("a present Mcp-Method must match: -32020/400 with id null", () => {
    const note = { jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: envelope() } };
    const r = rejection(classifyPost(note, lookup({ "mcp-method": "notifications/progress" })));
    expect(r.status).toBe(400);
    expect(r.id).toBeNull();
    expect(r.error.code).toBe(HEADER_MISMATCH);
    expect(r.error.data).toEqual({
      reason: "header_mismatch",
      mismatch: { header: "notifications/progress", body: "notifications/cancelled" },
    });
    expect(accepted(classifyPost(note, lookup({ "mcp-method": " notifications/cancelled " }))).kind).toBe(
      "notification",
    );
  });
});

describe("classifyPost: with several faults, the first in envelope → headers → version → method wins", () => {
  it("envelope before headers", () => {
    const body = {
      jsonrpc: "2.0",
      id: 1,
      method: "no/such",
      params: { _meta: { [META.protocolVersion]: "2099-01-01" } },
    };
    expect(rejection(classifyPost(body, lookup())).error.code).toBe(-32602);
  });

  it("headers before version", () => {
    const body = modernBody("no/such", {}, envelope({ [META.protocolVersion]: "2099-01-01" }));
    // Unsupported version in body and header, but Mcp-Method missing: the SDK would say -32022; the issue order says -32020.
    expect(rejection(classifyPost(body, lookup({ "mcp-protocol-version": "2099-01-01" }))).error.code).toBe(
      HEADER_MISMATCH,
    );
    // Mcp-Name missing also outranks the version.
    const call = modernBody("tools/call", { name: "echo" }, envelope({ [META.protocolVersion]: "2099-01-01" }));
    expect(
      rejection(classifyPost(call, lookup({ "mcp-protocol-version": "2099-01-01", "mcp-method": "tools/call" }))).error
        .code,
    ).toBe(HEADER_MISMATCH);
  });

  it("version before method", () => {
    const body = modernBody("no/such", {}, envelope({ [META.protocolVersion]: "2099-01-01" }));
    const r = rejection(classifyPost(body, lookup({ "mcp-protocol-version": "2099-01-01", "mcp-method": "no/such" })));
    expect(r.error.code).toBe(UNSUPPORTED_PROTOCOL_VERSION);
    expect(r.status).toBe(400);
  });

  it("header rungs: protocol version, then method, then name", () => {
    const body = modernBody("tools/call", { name: "echo" });
    const all = lookup({ "mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list", "mcp-name": "other" });
    expect(rejection(classifyPost(body, all)).error.data).toEqual({
      reason: "header_mismatch",
      mismatch: { header: "2025-11-25", body: MODERN_VERSION },
    });
    const methodAndName = lookup({
      "mcp-protocol-version": MODERN_VERSION,
      "mcp-method": "tools/list",
      "mcp-name": "other",
    });
    expect(rejection(classifyPost(body, methodAndName)).error.data).toEqual({
      reason: "header_mismatch",
      mismatch: { header: "tools/list", body: "tools/call" },
    });
  });
});
