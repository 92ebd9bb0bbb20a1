// The legacy ⇄ 2026-07-28 translation for legacy sessions the gateway serves in front of a modern-only upstream.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeHeaderValue, encodeHeaderValue } from "../../src/protocol/modern-request.js";
import {
  initializeFromDiscover,
  legacyNotification,
  legacyResult,
  listenFilter,
  modernCapabilities,
  modernHeaders,
  modernParams,
  negotiatedVersion,
} from "../../src/bridge-to-modern/wire.js";

describe("legacy front wire", () => {
  it("the envelope and the headers of a modern request", () => {
    const envelope = {
      clientInfo: { name: "c", version: "1" },
      capabilities: { elicitation: {} },
      logLevel: "info" as const,
    };
    expect(modernParams({ name: "echo", _meta: { progressToken: 3 } }, envelope, { requestState: "s" })).toEqual({
      name: "echo",
      requestState: "s",
      _meta: {
        progressToken: 3,
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: "c", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
        "io.modelcontextprotocol/logLevel": "info",
      },
    });
    expect(modernHeaders("tools/call", { name: "echo" }, ["authorization", "Bearer x"])).toEqual([
      "authorization",
      "Bearer x",
      "mcp-protocol-version",
      "2026-07-28",
      "mcp-method",
      "tools/call",
      "mcp-name",
      "echo",
    ]);
    expect(modernHeaders("resources/read", { uri: "demo://é" }, []).at(-1)).toBe(
      `=?base64?${Buffer.from("demo://é").toString("base64")}?=`,
    );
    expect(modernHeaders("tools/list", {}, [])).toEqual([
      "mcp-protocol-version",
      "2026-07-28",
      "mcp-method",
      "tools/list",
    ]);
  });

  it("header values: plain ASCII as is, anything else (and the sentinel itself) in base64", () => {
    expect(encodeHeaderValue("get_weather")).toBe("get_weather");
    expect(encodeHeaderValue(" padded")).toMatch(/^=\?base64\?/);
    expect(encodeHeaderValue("=?base64?abc?=")).toBe(`=?base64?${Buffer.from("=?base64?abc?=").toString("base64")}?=`);
  });

  it("header values: whatever name the gateway writes (a rename, a federated member's name), the receiver decodes it back", () => {
    // Every well-formed string: any Unicode scalar, edge spaces, control characters, sentinel look-alikes.
    const name = fc.oneof(
      fc.string({ unit: "binary" }),
      fc.string().map((x) => ` ${x} `),
      fc.string().map((x) => `=?base64?${x}?=`),
    );
    fc.assert(
      fc.property(name, (value) => {
        const header = encodeHeaderValue(value);
        expect(header).toMatch(/^[\x20-\x7e]*$/);
        expect(decodeHeaderValue(header)).toBe(value);
      }),
    );
  });

  it("results, capabilities, versions, initialize and notifications", () => {
    expect(
      legacyResult({
        resultType: "complete",
        ttlMs: 0,
        cacheScope: "private",
        tools: [],
        _meta: { "io.modelcontextprotocol/serverInfo": {} },
      }),
    ).toEqual({ tools: [] });
    expect(legacyResult({ content: [], _meta: { keep: 1 } })).toEqual({ content: [], _meta: { keep: 1 } });
    expect(
      modernCapabilities({
        elicitation: { form: {} },
        sampling: {},
        roots: { listChanged: true },
        tasks: { list: {} },
      }),
    ).toEqual({
      elicitation: { form: {} },
      sampling: {},
      roots: { listChanged: true },
    });
    expect(negotiatedVersion("2025-06-18")).toBe("2025-06-18");
    expect(negotiatedVersion("2026-07-28")).toBe("2025-11-25");
    expect(
      initializeFromDiscover(
        {
          resultType: "complete",
          supportedVersions: ["2026-07-28"],
          capabilities: { tools: { listChanged: true }, extensions: { x: {} } },
          instructions: "hi",
          _meta: { "io.modelcontextprotocol/serverInfo": { name: "s", version: "2" } },
        },
        "2025-11-25",
      ),
    ).toEqual({
      protocolVersion: "2025-11-25",
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: "s", version: "2" },
      instructions: "hi",
    });
    expect(listenFilter({ tools: { listChanged: true }, resources: { subscribe: true } }, ["a://b"])).toEqual({
      toolsListChanged: true,
      resourceSubscriptions: ["a://b"],
    });
    expect(listenFilter({}, [])).toEqual({});
    expect(
      legacyNotification({
        jsonrpc: "2.0",
        method: "notifications/resources/updated",
        params: { uri: "a://b", _meta: { "io.modelcontextprotocol/subscriptionId": 1 } },
      }),
    ).toEqual({
      jsonrpc: "2.0",
      method: "notifications/resources/updated",
      params: { uri: "a://b" },
    });
  });
});
