// The SDK 1.x client against the real @modelcontextprotocol/server-everything
// (streamableHttp mode), once directly and once through the gateway: every
// outcome must be identical after replacing the session id.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { directVsGateway, sseMessages } from "../helpers/compare.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import { exchangesWithBody, isRecord, isToolsCall, MCP_ACCEPT } from "../helpers/http.js";
import type { SdkClientHandle } from "../helpers/sdk-client.js";
import { startServerEverything } from "../helpers/server-everything.js";

const env = gatewayInFrontOf(() => startServerEverything(), { beforeAll, afterAll });

/** The JSON-RPC response the client POSTed back for a server→client request. */
function isClientAnswer(b: unknown): boolean {
  return isRecord(b) && "result" in b && !("method" in b);
}

describe("SDK 1.x client ⇄ server-everything: direct vs through the gateway", () => {
  it("initialize: same serverInfo, capabilities, instructions and negotiated protocol version", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => ({
      serverInfo: h.client.getServerVersion(),
      capabilities: h.client.getServerCapabilities(),
      instructions: h.client.getInstructions(),
      protocolVersion: h.transport.protocolVersion,
      hasSession: typeof h.sessionId() === "string",
      initStatus: h.http[0]?.status,
      initContentType: h.http[0]?.contentType,
    }));
    expect(direct).toMatchObject({
      serverInfo: { name: "mcp-servers/everything" },
      hasSession: true,
      initStatus: 200,
    });
    expect(viaGateway).toEqual(direct);
  });

  it("tools/list is identical, including the capability-gated tools", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => await h.client.listTools());
    const names =
      isRecord(direct) && Array.isArray(direct.tools)
        ? direct.tools.map((t: unknown) => (isRecord(t) ? t.name : undefined))
        : [];
    expect(names).toEqual(
      expect.arrayContaining(["echo", "get-sum", "trigger-elicitation-request", "trigger-sampling-request"]),
    );
    expect(viaGateway).toEqual(direct);
  });

  it("tools/call results are identical (text, structured, image, tool error, unknown tool)", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const echo = await h.client.callTool({ name: "echo", arguments: { message: "héllo ✓ through the gateway" } });
      const sum = await h.client.callTool({ name: "get-sum", arguments: { a: 19, b: 23 } });
      const structured = await h.client.callTool({
        name: "get-structured-content",
        arguments: { location: "New York" },
      });
      const image = await h.client.callTool({ name: "get-tiny-image", arguments: {} });
      const badArgs = await h.client.callTool({ name: "get-sum", arguments: { a: "x" } });
      const unknown = await h.client.callTool({ name: "no-such-tool", arguments: {} }).then(
        (r) => ({ ok: r }),
        (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }),
      );
      return { echo, sum, structured, image, badArgs, unknown };
    });
    expect(direct).toMatchObject({
      echo: { content: [{ type: "text", text: "Echo: héllo ✓ through the gateway" }] },
      badArgs: { isError: true },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("progress notifications arrive in the same sequence during a call", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const progress: unknown[] = [];
      const result = await h.client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
        CallToolResultSchema,
        { onprogress: (p) => progress.push(p) },
      );
      const post = exchangesWithBody(h.http, isToolsCall("trigger-long-running-operation"))[0];
      return { result, progress, responseType: post?.contentType };
    });
    expect(direct).toMatchObject({
      progress: [
        { progress: 1, total: 3 },
        { progress: 2, total: 3 },
        { progress: 3, total: 3 },
      ],
      responseType: "text/event-stream",
    });
    expect(viaGateway).toEqual(direct);
  });

  it("elicitation round trip: the request arrives on the call's SSE stream and the answer is POSTed back", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const result = await h.client.callTool({ name: "trigger-elicitation-request", arguments: {} });
      const call = exchangesWithBody(h.http, isToolsCall("trigger-elicitation-request"))[0];
      const answers = exchangesWithBody(
        h.http,
        (b) => isClientAnswer(b) && isRecord(b) && isRecord(b.result) && b.result.action === "accept",
      );
      // The tool's result can overtake the 202 that acknowledges the client's answer.
      await Promise.all(answers.map((a) => a.responded));
      return {
        result,
        elicitation: h.events.filter((e) => e.method === "elicitation/create"),
        requestOnCallStream: sseMessages(call?.responseText ?? "").filter(
          (m) => isRecord(m) && m.method === "elicitation/create",
        ),
        answerPosts: answers.map((a) => ({ status: a.status, body: JSON.parse(a.requestBody ?? "null") as unknown })),
      };
    });
    expect(direct).toMatchObject({
      result: {
        content: expect.arrayContaining([
          { type: "text", text: "✅ User provided the requested information!" },
          { type: "text", text: expect.stringContaining("- Name: Ada Lovelace") },
        ]),
      },
      elicitation: [{ kind: "request", method: "elicitation/create" }],
      requestOnCallStream: [{ method: "elicitation/create" }],
      answerPosts: [{ status: 202 }],
    });
    expect(viaGateway).toEqual(direct);
  });

  it("sampling round trip through trigger-sampling-request", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const result = await h.client.callTool({
        name: "trigger-sampling-request",
        arguments: { prompt: "Say hi", maxTokens: 16 },
      });
      const call = exchangesWithBody(h.http, isToolsCall("trigger-sampling-request"))[0];
      const answers = exchangesWithBody(
        h.http,
        (b) => isClientAnswer(b) && isRecord(b) && isRecord(b.result) && b.result.model === "test-model",
      );
      await Promise.all(answers.map((a) => a.responded));
      return {
        result,
        sampling: h.events.filter((e) => e.method === "sampling/createMessage"),
        requestOnCallStream: sseMessages(call?.responseText ?? "").filter(
          (m) => isRecord(m) && m.method === "sampling/createMessage",
        ),
        answerStatuses: answers.map((a) => a.status),
      };
    });
    expect(direct).toMatchObject({
      sampling: [{ kind: "request", method: "sampling/createMessage" }],
      requestOnCallStream: [{ method: "sampling/createMessage" }],
      answerStatuses: [202],
    });
    expect(JSON.stringify(direct)).toContain("sampled answer from the test client");
    expect(viaGateway).toEqual(direct);
  });

  it("resources: list, read, templates and a templated read are identical", async () => {
    const { direct, viaGateway } = await directVsGateway(
      env.urls(),
      async (h) => {
        const list = await h.client.listResources();
        const first = list.resources[0];
        const read = first ? await h.client.readResource({ uri: first.uri }) : undefined;
        const templates = await h.client.listResourceTemplates();
        const templated = await h.client.readResource({ uri: "demo://resource/dynamic/text/7" });
        const missing = await h.client.readResource({ uri: "demo://resource/dynamic/text/0" }).then(
          (r) => ({ ok: r }),
          (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }),
        );
        return { list, read, templates, templated, missing };
      },
      // The templated resource embeds the wall-clock time of the read.
      {
        normalise: (v) => JSON.parse(JSON.stringify(v).replace(/created at [^"]*"/g, 'created at <time>"')) as unknown,
      },
    );
    expect(direct).toMatchObject({
      read: { contents: [{ uri: expect.stringContaining("demo://resource/static/document/") }] },
      templated: {
        contents: [
          { uri: "demo://resource/dynamic/text/7", text: "Resource 7: This is a plaintext resource created at <time>" },
        ],
      },
      missing: { error: expect.stringContaining("Unknown resource") },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("prompts: list and get are identical", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => ({
      list: await h.client.listPrompts(),
      simple: await h.client.getPrompt({ name: "simple-prompt" }),
      args: await h.client.getPrompt({ name: "args-prompt", arguments: { city: "Paris", state: "Île-de-France" } }),
    }));
    expect(direct).toMatchObject({
      simple: {
        messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt without arguments." } }],
      },
      args: { messages: [{ content: { text: "What's weather in Paris, Île-de-France?" } }] },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("server-initiated messages on the standalone GET stream (roots/list, log, resources/updated) are identical", async () => {
    const uri = "demo://resource/static/document/features.md";
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h: SdkClientHandle) => {
      // server-everything asks for roots ~350 ms after initialization, on the GET stream,
      // then logs what it received.
      await h.waitForEvent(
        (e) => e.method === "notifications/message" && JSON.stringify(e.params).includes("Roots updated"),
      );
      await h.client.subscribeResource({ uri });
      await h.client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
      await h.waitForEvent((e) => e.method === "notifications/resources/updated");
      await h.client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
      await h.client.unsubscribeResource({ uri });
      await h.waitForEvent(
        (e) => e.method === "notifications/message" && JSON.stringify(e.params).includes("Unsubscribe"),
      );
      const get = h.http.find((x) => x.method === "GET" && x.status === 200);
      const onGet = sseMessages(get?.responseText ?? "").map((m) => (isRecord(m) ? (m.method ?? "response") : m));
      return {
        rootsRequests: h.events.filter((e) => e.method === "roots/list"),
        logs: h.events.filter((e) => e.method === "notifications/message"),
        updated: h.events.filter((e) => e.method === "notifications/resources/updated").slice(0, 1),
        getContentType: get?.contentType,
        onGet: [...new Set(onGet)].sort(),
      };
    });
    expect(direct).toMatchObject({
      rootsRequests: [{ kind: "request", method: "roots/list" }],
      updated: [{ method: "notifications/resources/updated", params: { uri } }],
      getContentType: "text/event-stream",
      onGet: expect.arrayContaining(["notifications/message", "notifications/resources/updated", "roots/list"]),
    });
    expect(viaGateway).toEqual(direct);
  });

  it("DELETE terminates the session; the old session id is then rejected exactly as directly", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const sessionId = h.sessionId() ?? "";
      const before = await h.client.callTool({ name: "echo", arguments: { message: "still here" } });
      await h.transport.terminateSession();
      const del = h.http.find((x) => x.method === "DELETE");
      const stale = await fetch(h.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: MCP_ACCEPT,
          "mcp-session-id": sessionId,
          "mcp-protocol-version": h.transport.protocolVersion ?? "",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list" }),
      });
      return {
        before,
        deleteStatus: del?.status,
        sessionIdAfterDelete: h.sessionId(),
        staleStatus: stale.status,
        staleContentType: stale.headers.get("content-type"),
        staleBody: await stale.json(),
      };
    });
    // server-everything answers an unknown session with 400 (its own choice; the SDK fixture answers 404).
    expect(direct).toMatchObject({ deleteStatus: 200, sessionIdAfterDelete: undefined, staleStatus: 400 });
    expect(viaGateway).toEqual(direct);
  });
});
