// Issue 13, on the era bridge, with a real SDK 1.x upstream (the conformance fixture):
// Mcp-Param-* validation (SEP-2243), the HTTP status of a relayed -32021, input
// requests sent together gathered into one round (MRTR and a task's inputRequests),
// and a hung legacy upstream answered 504 like on every other path.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { startConformanceUpstream, type ConformanceUpstream } from "../fixtures/conformance-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { modernHeaders, modernMeta, modernRpc } from "../helpers/modern-http.js";
import { startScriptedUpstream } from "../helpers/scripted-upstream.js";
import { startRecordingProxy } from "../helpers/ext-tasks-client.js";

const INPUT_CAPS = { elicitation: {}, sampling: {}, roots: {} };
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

type Json = Record<string, unknown>;

describe("the era bridge in front of a legacy SDK upstream", () => {
  let upstream: ConformanceUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startConformanceUpstream();
    gw = await startGateway({
      upstream: { url: upstream.url, era: "legacy" },
      server: { host: "127.0.0.1", port: 0, sseKeepAliveMs: 0 },
      // The count bound closes the round as soon as the three requests are in: no timing in the test.
      eraBridge: { inputGatherMs: 10_000, maxInputRequestsPerRound: 3 },
      tasks: { rules: [{ tool: "test_input_required_result_multiple_inputs", mode: "always" }] },
      log: { level: "silent" },
    });
  });
  afterAll(async () => {
    await gw.close(0);
    await upstream.close();
  });

  const callCustom = (
    headers: Record<string, string | undefined>,
    args: Json = { region: "us-west1" },
    capabilities: Json = {},
  ) => modernRpc(gw.url, "tools/call", { name: "test_custom_header", arguments: args }, { headers, capabilities });

  describe("Mcp-Param-* headers (x-mcp-header)", () => {
    beforeAll(async () => {
      // What a client does first: the gateway learns the annotations from the answer it bridges.
      const listed = await modernRpc(gw.url, "tools/list", {});
      const tools = (listed.message.result as { tools: Array<{ name: string; inputSchema: Json }> }).tools;
      expect(tools.find((t) => t.name === "test_custom_header")?.inputSchema).toMatchObject({
        properties: { region: { "x-mcp-header": "Region" } },
      });
    });

    it("accepts a header that matches the argument, plain or base64", async () => {
      const plain = await callCustom({ "mcp-param-region": "us-west1" });
      expect(plain.status).toBe(200);
      expect(plain.message.result).toMatchObject({ content: [{ type: "text", text: "region=us-west1" }] });
      const encoded = await callCustom(
        { "mcp-param-region": `=?base64?${Buffer.from("Hello, 世界").toString("base64")}?=` },
        { region: "Hello, 世界" },
      );
      expect(encoded.status).toBe(200);
      // No sentinel, so a literal value: it matches the same literal argument.
      const literal = await callCustom({ "mcp-param-region": "=?base64?SGVsbG8=" }, { region: "=?base64?SGVsbG8=" });
      expect(literal.status).toBe(200);
    });

    it.each([
      [
        "a header that differs from the argument",
        { "mcp-param-region": "eu-west1" },
        { region: "us-west1" },
        /does not match arguments.region/,
      ],
      [
        "a header missing for an argument that is set",
        {},
        { region: "us-west1" },
        /Mcp-Param-Region header is missing/,
      ],
      [
        "a header for an argument that is absent",
        { "mcp-param-region": "us-west1" },
        { query: "x" },
        /present but arguments.region is absent/,
      ],
      ["base64 with bad padding", { "mcp-param-region": "=?base64?SGVsbG8?=" }, { region: "Hello" }, /invalid base64/],
      [
        "base64 with characters outside the alphabet",
        { "mcp-param-region": "=?base64?SGVs!!!bG8=?=" },
        { region: "Hello" },
        /invalid base64/,
      ],
    ])("refuses %s: 400, -32020", async (_what, headers, args, message) => {
      const reply = await callCustom(headers, args);
      expect(reply.status).toBe(400);
      expect(reply.message.error).toMatchObject({ code: -32020, message });
    });

    it("refuses a header value with characters a header may not carry (non-ASCII sent raw)", async () => {
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 9,
        method: "tools/call",
        params: { name: "test_custom_header", arguments: { region: "café" }, _meta: modernMeta() },
      });
      const answer = await new Promise<{ status: number; body: Json }>((resolve, reject) => {
        const req = httpRequest(
          gw.url,
          {
            method: "POST",
            headers: {
              ...modernHeaders("tools/call", "test_custom_header"),
              "mcp-param-region": Buffer.from("café", "utf8").toString("latin1"),
            },
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => (text += c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Json }));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: -32020, message: /characters not allowed/ });
    });

    it("validates a call whose caller never listed the tools: the gateway asks the upstream itself", async () => {
      // Other capabilities: another pooled upstream session, so another view with nothing learnt yet.
      const reply = await callCustom({ "mcp-param-region": "eu-west1" }, { region: "us-west1" }, { roots: {} });
      expect(reply.status).toBe(400);
      expect(reply.message.error).toMatchObject({ code: -32020 });
      const ok = await callCustom({ "mcp-param-region": "us-west1" }, { region: "us-west1" }, { roots: {} });
      expect(ok.status).toBe(200);
    });
  });

  it("asks the upstream for its tools once per listing, not once per call of a tool the listing does not name", async () => {
    const proxy = await startRecordingProxy(upstream.url);
    const counted = await startGateway({
      upstream: { url: proxy.url, era: "legacy" },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "silent" },
    });
    try {
      // No Mcp-Param-* header to check for a tool the upstream does not list: the upstream answers each call.
      for (let i = 0; i < 3; i++)
        await modernRpc(counted.url, "tools/call", { name: "not_a_listed_tool", arguments: {} });
      const lists = proxy.posted().filter(({ message }) => message.method === "tools/list");
      const calls = proxy.posted().filter(({ message }) => message.method === "tools/call");
      expect(calls).toHaveLength(3);
      expect(lists).toHaveLength(1);
    } finally {
      await counted.close(0);
      await proxy.close();
    }
  });

  it("relays a legacy upstream's -32021 (a capability the client did not declare) with HTTP 400", async () => {
    const reply = await modernRpc(gw.url, "tools/call", { name: "test_missing_capability", arguments: {} });
    expect(reply.status).toBe(400);
    expect(reply.message.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    const declared = await modernRpc(
      gw.url,
      "tools/call",
      { name: "test_missing_capability", arguments: {} },
      { capabilities: { sampling: {} } },
    );
    expect(declared.status).toBe(200);
  });

  it("gathers elicitation, sampling and roots sent together into one input_required, and takes all answers in one retry", async () => {
    const params = { name: "test_input_required_result_multiple_inputs", arguments: {} };
    const first = await modernRpc(gw.url, "tools/call", params, { capabilities: INPUT_CAPS });
    const round = first.message.result as {
      resultType: string;
      inputRequests: Record<string, { method: string }>;
      requestState: string;
    };
    expect(round.resultType).toBe("input_required");
    expect(
      Object.values(round.inputRequests)
        .map((r) => r.method)
        .sort(),
    ).toEqual(["elicitation/create", "roots/list", "sampling/createMessage"]);
    const inputResponses: Json = {};
    for (const [key, r] of Object.entries(round.inputRequests)) {
      inputResponses[key] =
        r.method === "elicitation/create"
          ? { action: "accept", content: { name: "Alice" } }
          : r.method === "sampling/createMessage"
            ? { role: "assistant", content: { type: "text", text: "Hi!" }, model: "m", stopReason: "endTurn" }
            : { roots: [{ uri: "file:///tmp/a", name: "a" }] };
    }
    const second = await modernRpc(
      gw.url,
      "tools/call",
      { ...params, inputResponses, requestState: round.requestState },
      { capabilities: INPUT_CAPS },
    );
    expect(second.message.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "name=Alice, greeting=Hi!, roots=1" }],
    });
  });

  it("a task gets the requests sent together as one inputRequests change, and goes on once all are answered", async () => {
    const params = { name: "test_input_required_result_multiple_inputs", arguments: {} };
    const caps = { ...INPUT_CAPS, ...TASKS };
    const created = await modernRpc(gw.url, "tools/call", params, { capabilities: caps });
    const taskId = (created.message.result as { resultType: string; taskId: string }).taskId;
    expect(created.message.result).toMatchObject({ resultType: "task" });
    const get = async (): Promise<Json> =>
      (await modernRpc(gw.url, "tasks/get", { taskId }, { capabilities: caps })).message.result as Json;
    let task = await get();
    for (let i = 0; i < 200 && task.status === "working"; i++) {
      await new Promise((r) => setTimeout(r, 25));
      task = await get();
    }
    // The first input_required the task shows already holds all three.
    expect(task.status).toBe("input_required");
    const requests = task.inputRequests as Record<string, { method: string }>;
    expect(
      Object.values(requests)
        .map((r) => r.method)
        .sort(),
    ).toEqual(["elicitation/create", "roots/list", "sampling/createMessage"]);
    const inputResponses: Json = {};
    for (const [key, r] of Object.entries(requests)) {
      inputResponses[key] =
        r.method === "elicitation/create"
          ? { action: "accept", content: { name: "Bob" } }
          : r.method === "sampling/createMessage"
            ? { role: "assistant", content: { type: "text", text: "Yo" }, model: "m", stopReason: "endTurn" }
            : { roots: [] };
    }
    const updated = await modernRpc(gw.url, "tasks/update", { taskId, inputResponses }, { capabilities: caps });
    expect(updated.message.error).toBeUndefined();
    for (let i = 0; i < 200 && task.status !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 25));
      task = await get();
    }
    expect(task).toMatchObject({
      status: "completed",
      result: { content: [{ type: "text", text: "name=Bob, greeting=Yo, roots=0" }] },
    });
  });
});

describe("a legacy upstream that hangs while its session is opened", () => {
  it("answers a modern client 504 upstream_timeout (eraBridge.sessionOpenTimeoutMs), as pass-through does for a hung upstream", async () => {
    // Accepts the connection and never answers initialize: no real MCP peer does that on purpose.
    const upstream = await startScriptedUpstream(() => undefined);
    const gw = await startGateway({
      upstream: { url: upstream.url, era: "legacy" },
      server: { host: "127.0.0.1", port: 0, sseKeepAliveMs: 0 },
      eraBridge: { sessionOpenTimeoutMs: 200 },
      log: { level: "silent" },
    });
    try {
      const reply = await modernRpc(gw.url, "tools/call", { name: "slow", arguments: {} });
      expect(reply.status).toBe(504);
      expect(reply.message.error).toMatchObject({ code: -32603, data: { reason: "upstream_timeout" } });
    } finally {
      await gw.close(0);
      await upstream.close();
    }
  });
});
