// The SDK 1.x client against an SDK 1.x server (the project's demo upstream),
// once directly and once through the gateway: every outcome must be identical
// after replacing the session id.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallToolResultSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { directVsGateway, sseMessages } from "../helpers/compare.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import { exchangesWithBody, isRecord, isToolsCall, MCP_ACCEPT, waitForExchange } from "../helpers/http.js";

const env = gatewayInFrontOf(() => startSdkUpstream({ host: "127.0.0.1", port: 0 }), { beforeAll, afterAll });

function errorOf(e: unknown): unknown {
  if (e instanceof Error) {
    const code = (e as Error & { code?: unknown }).code;
    return { name: e.name, message: e.message, code };
  }
  return { thrown: String(e) };
}

describe("SDK 1.x client ⇄ SDK 1.x server: direct vs through the gateway", () => {
  it("initialize: same serverInfo, capabilities, instructions and negotiated protocol version", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => ({
      serverInfo: h.client.getServerVersion(),
      capabilities: h.client.getServerCapabilities(),
      instructions: h.client.getInstructions(),
      protocolVersion: h.transport.protocolVersion,
      hasSession: typeof h.sessionId() === "string",
      initStatus: h.http[0]?.status,
      initContentType: h.http[0]?.contentType,
      initializedAck: h.http[1]?.status,
    }));
    expect(direct).toMatchObject({
      serverInfo: { name: "demo-upstream", version: "1.0.0" },
      protocolVersion: "2025-11-25",
      hasSession: true,
      initStatus: 200,
      initializedAck: 202,
    });
    expect(viaGateway).toEqual(direct);
  });

  it("tools/list is identical", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => await h.client.listTools());
    const names =
      isRecord(direct) && Array.isArray(direct.tools)
        ? direct.tools.map((t: unknown) => (isRecord(t) ? t.name : undefined))
        : [];
    expect(names).toEqual(["echo", "add", "slow_task", "ask_user", "fail", "throw_error", "notify"]);
    expect(viaGateway).toEqual(direct);
  });

  it("tools/call: text, structured content, isError, JSON-RPC error, invalid arguments and unknown tool are identical", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const echo = await h.client.callTool({ name: "echo", arguments: { text: "héllo ✓ — 🚀" } });
      const add = await h.client.callTool({ name: "add", arguments: { a: 40, b: 2 } });
      const fail = await h.client.callTool({ name: "fail", arguments: { message: "nope" } });
      const thrown = await h.client.callTool({ name: "throw_error", arguments: { message: "kaboom" } }).then(
        (r) => ({ ok: r }),
        (e: unknown) => ({ error: errorOf(e) }),
      );
      const invalid = await h.client.callTool({ name: "add", arguments: { a: "forty" } });
      const unknown = await h.client.callTool({ name: "nope", arguments: {} }).then(
        (r) => ({ ok: r }),
        (e: unknown) => ({ error: errorOf(e) }),
      );
      const echoResponseType = exchangesWithBody(h.http, isToolsCall("echo"))[0]?.contentType;
      return { echo, add, fail, thrown, invalid, unknown, echoResponseType };
    });
    expect(direct).toMatchObject({
      echo: { content: [{ type: "text", text: "héllo ✓ — 🚀" }] },
      add: { structuredContent: { sum: 42 } },
      fail: { isError: true, content: [{ type: "text", text: "nope" }] },
      thrown: { error: { code: -32603, message: expect.stringContaining("kaboom") } },
      invalid: { isError: true },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("progress notifications of slow_task arrive in the same sequence, on the call's SSE stream", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const progress: unknown[] = [];
      const result = await h.client.callTool(
        { name: "slow_task", arguments: { durationMs: 150, steps: 3 } },
        CallToolResultSchema,
        { onprogress: (p) => progress.push(p) },
      );
      const call = exchangesWithBody(h.http, isToolsCall("slow_task"))[0];
      const onStream = sseMessages(call?.responseText ?? "").map((m) =>
        isRecord(m) ? (typeof m.method === "string" ? m.method : "response") : m,
      );
      return { result, progress, contentType: call?.contentType, onStream };
    });
    expect(direct).toMatchObject({
      result: { content: [{ type: "text", text: "done after 150 ms in 3 steps" }] },
      progress: [
        { progress: 1, total: 3, message: "step 1 of 3" },
        { progress: 2, total: 3, message: "step 2 of 3" },
        { progress: 3, total: 3, message: "step 3 of 3" },
      ],
      contentType: "text/event-stream",
      onStream: ["notifications/progress", "notifications/progress", "notifications/progress", "response"],
    });
    expect(viaGateway).toEqual(direct);
  });

  it("elicitation round trip: the request arrives on the call's SSE stream and the answer is POSTed back (accept)", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const result = await h.client.callTool({ name: "ask_user", arguments: { question: "Who are you?" } });
      const call = exchangesWithBody(h.http, isToolsCall("ask_user"))[0];
      const answers = exchangesWithBody(h.http, (b) => isRecord(b) && isRecord(b.result) && "action" in b.result);
      await Promise.all(answers.map((a) => a.responded));
      return {
        result,
        elicitations: h.events.filter((e) => e.method === "elicitation/create"),
        onCallStream: sseMessages(call?.responseText ?? "").filter(
          (m) => isRecord(m) && m.method === "elicitation/create",
        ),
        answers: answers.map((a) => ({ status: a.status, body: JSON.parse(a.requestBody ?? "null") as unknown })),
      };
    });
    expect(direct).toMatchObject({
      result: {
        content: [{ type: "text", text: 'action: accept; content: {"name":"Ada Lovelace","check":true,"integer":7}' }],
      },
      elicitations: [{ kind: "request", method: "elicitation/create", params: { message: "Who are you?" } }],
      onCallStream: [{ method: "elicitation/create", params: { message: "Who are you?" } }],
      answers: [{ status: 202, body: { result: { action: "accept" } } }],
    });
    expect(viaGateway).toEqual(direct);
  });

  it("elicitation round trip with a declined answer is identical", async () => {
    const decline = (): ElicitResult => ({ action: "decline" });
    const { direct, viaGateway } = await directVsGateway(
      env.urls(),
      async (h) => await h.client.callTool({ name: "ask_user", arguments: {} }),
      { client: { onElicit: decline } },
    );
    expect(direct).toEqual({ content: [{ type: "text", text: "action: decline; content: no content" }] });
    expect(viaGateway).toEqual(direct);
  });

  it("cancelling a slow call (notifications/cancelled) behaves identically and the session keeps working", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const ac = new AbortController();
      const progress: unknown[] = [];
      const outcome = await h.client
        .callTool({ name: "slow_task", arguments: { durationMs: 20_000, steps: 400 } }, CallToolResultSchema, {
          signal: ac.signal,
          onprogress: (p) => {
            progress.push(p);
            if (progress.length === 2) ac.abort(new Error("user cancelled"));
          },
        })
        .then(
          (r) => ({ ok: r }),
          (e: unknown) => ({ error: errorOf(e) }),
        );
      const cancelled = await waitForExchange(h.http, (b) => isRecord(b) && b.method === "notifications/cancelled");
      const after = await h.client.callTool({ name: "echo", arguments: { text: "after cancel" } });
      return {
        outcome,
        progress,
        cancel: { status: cancelled.status, body: JSON.parse(cancelled.requestBody ?? "null") as unknown },
        after,
      };
    });
    expect(direct).toMatchObject({
      outcome: { error: { message: expect.stringContaining("user cancelled") } },
      progress: [{ progress: 1 }, { progress: 2 }],
      cancel: {
        status: 202,
        body: { method: "notifications/cancelled", params: { reason: expect.stringContaining("user cancelled") } },
      },
      after: { content: [{ type: "text", text: "after cancel" }] },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("quick calls on the same session complete while a slow call is still running", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const ac = new AbortController();
      let slowSettled = false;
      const slow = h.client
        .callTool({ name: "slow_task", arguments: { durationMs: 20_000, steps: 10 } }, CallToolResultSchema, {
          signal: ac.signal,
        })
        .then(
          () => "completed",
          () => "cancelled",
        )
        .finally(() => {
          slowSettled = true;
        });
      const quick = await Promise.all(
        [1, 2, 3, 4, 5].map((n) => h.client.callTool({ name: "add", arguments: { a: n, b: n } })),
      );
      const slowWasRunning = !slowSettled;
      ac.abort(new Error("done waiting"));
      return { quick: quick.map((r) => r.structuredContent), slowWasRunning, slow: await slow };
    });
    expect(direct).toEqual({
      quick: [{ sum: 2 }, { sum: 4 }, { sum: 6 }, { sum: 8 }, { sum: 10 }],
      slowWasRunning: true,
      slow: "cancelled",
    });
    expect(viaGateway).toEqual(direct);
  });

  it("resources: list, read, templates and a templated read are identical", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => ({
      list: await h.client.listResources(),
      readme: await h.client.readResource({ uri: "demo://readme" }),
      templates: await h.client.listResourceTemplates(),
      item: await h.client.readResource({ uri: "demo://items/2" }),
      missing: await h.client.readResource({ uri: "demo://nothing-here" }).then(
        (r) => ({ ok: r }),
        (e: unknown) => ({ error: errorOf(e) }),
      ),
    }));
    expect(direct).toMatchObject({
      list: {
        resources: expect.arrayContaining([
          expect.objectContaining({ uri: "demo://readme" }),
          expect.objectContaining({ uri: "demo://items/3" }),
        ]),
      },
      readme: {
        contents: [
          { uri: "demo://readme", mimeType: "text/markdown", text: expect.stringContaining("# demo-upstream") },
        ],
      },
      templates: { resourceTemplates: [{ uriTemplate: "demo://items/{id}" }] },
      item: { contents: [{ uri: "demo://items/2", text: '{"id":"2","label":"Item 2"}' }] },
      missing: { error: { message: expect.stringContaining("demo://nothing-here") } },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("prompts: list and get are identical", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => ({
      list: await h.client.listPrompts(),
      greet: await h.client.getPrompt({ name: "greet", arguments: { name: "Grace" } }),
    }));
    expect(direct).toMatchObject({
      list: { prompts: [{ name: "greet", arguments: [{ name: "name", required: true }] }] },
      greet: { messages: [{ role: "user", content: { type: "text", text: "Please greet Grace warmly." } }] },
    });
    expect(viaGateway).toEqual(direct);
  });

  it("notifications sent on the standalone GET stream (notify) arrive identically", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const get = await h.standaloneStream();
      const result = await h.client.callTool({ name: "notify", arguments: {} });
      await h.waitForEvent((e) => e.method === "notifications/message");
      await h.waitForEvent((e) => e.method === "notifications/resources/list_changed");
      const call = exchangesWithBody(h.http, isToolsCall("notify"))[0];
      return {
        result,
        events: h.events,
        getContentType: get.contentType,
        onGetStream: sseMessages(get.responseText),
        onCallStream: sseMessages(call?.responseText ?? "").map((m) =>
          isRecord(m) && "method" in m ? m.method : "response",
        ),
      };
    });
    expect(direct).toMatchObject({
      result: { content: [{ type: "text", text: "notified" }] },
      getContentType: "text/event-stream",
      onGetStream: [
        { method: "notifications/resources/list_changed" },
        {
          method: "notifications/message",
          params: { level: "info", logger: "demo-upstream", data: "notify was called" },
        },
      ],
      onCallStream: ["response"],
    });
    expect(viaGateway).toEqual(direct);
  });

  it("DELETE terminates the session; the old session id then gets the same 404 as directly", async () => {
    const { direct, viaGateway } = await directVsGateway(env.urls(), async (h) => {
      const sessionId = h.sessionId() ?? "";
      await h.transport.terminateSession();
      const del = h.http.find((x) => x.method === "DELETE");
      const headers = {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        "mcp-session-id": sessionId,
        "mcp-protocol-version": h.transport.protocolVersion ?? "",
      };
      const stale = await fetch(h.url, {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list" }),
      });
      const staleGet = await fetch(h.url, { method: "GET", headers: { ...headers, accept: "text/event-stream" } });
      const staleDelete = await fetch(h.url, { method: "DELETE", headers });
      return {
        deleteStatus: del?.status,
        sessionIdAfterDelete: h.sessionId(),
        stale: { status: stale.status, contentType: stale.headers.get("content-type"), body: await stale.json() },
        staleGet: { status: staleGet.status, body: await staleGet.text() },
        staleDelete: { status: staleDelete.status, body: await staleDelete.text() },
      };
    });
    expect(direct).toMatchObject({
      deleteStatus: 200,
      sessionIdAfterDelete: undefined,
      stale: { status: 404, body: { error: { code: -32001 } } },
      staleGet: { status: 404 },
      staleDelete: { status: 404 },
    });
    expect(viaGateway).toEqual(direct);
  });
});
