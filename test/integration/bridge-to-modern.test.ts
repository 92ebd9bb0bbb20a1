// A legacy client (SDK 1.x, 2025-11-25) in front of a modern-only upstream (an
// SDK 2.x server that refuses legacy requests): the gateway serves the legacy
// session itself and sends each request upstream as a stateless 2026-07-28
// request. MRTR input becomes server-to-client requests on the session, and the
// GET stream is fed by subscriptions/listen.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { MODERN_README, MODERN_SERVER_INFO, startModernUpstream } from "../fixtures/modern-upstream.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import { behindRecordingProxy } from "../helpers/ext-tasks-client.js";

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  seen: { logs: unknown[]; toolsChanged: number; updated: string[] };
}

const open: Connected[] = [];

async function connect(url: string): Promise<Connected> {
  const client = new Client(
    { name: "legacy-front-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: "assistant",
    model: "test-model",
    content: { type: "text", text: "Paris" },
  }));
  const seen = { logs: [] as unknown[], toolsChanged: 0, updated: [] as string[] };
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
    seen.logs.push(n.params.data);
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    seen.toolsChanged += 1;
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
    seen.updated.push(n.params.uri);
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const c = { client, transport, seen };
  open.push(c);
  return c;
}

afterAll(async () => {
  await Promise.all(
    open.splice(0).map(async (c) => {
      await c.transport.terminateSession().catch(() => undefined);
      await c.client.close().catch(() => undefined);
    }),
  );
});

/** Repeats `poke` until `done` holds: a listen upstream opens asynchronously (bounded). */
async function until(done: () => boolean, poke: () => void): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) {
    poke();
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("SDK 1.x client → gateway → modern-only SDK 2.x server", () => {
  const env = gatewayInFrontOf(async () => behindRecordingProxy(await startModernUpstream({ legacy: "reject" })), {
    beforeAll,
    afterAll,
  });

  it("initialize is served by the gateway from the upstream's server/discover", async () => {
    const { client, transport } = await connect(env.urls().gateway);
    expect(client.getServerVersion()).toMatchObject(MODERN_SERVER_INFO);
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(typeof transport.sessionId).toBe("string");
    expect(client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      resources: { subscribe: true },
    });
    expect(client.getInstructions()).toContain("modern");
  });

  it("lists, calls, reads, prompts and completions work, as legacy results", async () => {
    const { client } = await connect(env.urls().gateway);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "slow", "ask", "sample", "fail"]));
    expect(tools).not.toHaveProperty("resultType");
    expect(tools).not.toHaveProperty("ttlMs");
    const echo = await client.callTool({ name: "echo", arguments: { text: "héllo ✓" } });
    expect(echo).toEqual({ content: [{ type: "text", text: "héllo ✓" }] });
    expect(await client.callTool({ name: "fail", arguments: {} })).toMatchObject({ isError: true });
    const read = await client.readResource({ uri: "demo://readme" });
    expect(read.contents[0]).toMatchObject({ uri: "demo://readme", text: MODERN_README });
    const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
    expect(prompt.messages[0]?.content).toMatchObject({ type: "text", text: "Please greet Ada warmly." });
    const completion = await client.complete({
      ref: { type: "ref/prompt", name: "greet" },
      argument: { name: "name", value: "Al" },
    });
    expect(completion.completion.values).toEqual(["Alan", "Alonzo"]);
    const unknown = await client.callTool({ name: "nope", arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(unknown).toBeInstanceOf(Error);
  });

  it("progress reaches the caller's token; logs follow logging/setLevel", async () => {
    const { client, seen } = await connect(env.urls().gateway);
    const progress: Progress[] = [];
    await client.callTool({ name: "slow", arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(progress.map((p) => p.progress)).toEqual([1, 2, 3]);
    await client.setLoggingLevel("info");
    await client.callTool({ name: "echo", arguments: { text: "logged" } });
    expect(seen.logs).toContain("echo logged");
  });

  it("MRTR input becomes server-to-client requests on the session: elicitation and sampling", async () => {
    const { client } = await connect(env.urls().gateway);
    expect(await client.callTool({ name: "ask", arguments: {} })).toEqual({
      content: [{ type: "text", text: "hello Ada" }],
    });
    expect(await client.callTool({ name: "sample", arguments: {} })).toEqual({
      content: [{ type: "text", text: "model test-model said: Paris" }],
    });
  });

  it("the GET stream carries list changes and subscribed resource updates (subscriptions/listen upstream)", async () => {
    const { client, seen } = await connect(env.urls().gateway);
    await until(
      () => seen.toolsChanged > 0,
      () => env.upstream().upstream.notify.toolsChanged(),
    );
    expect(seen.toolsChanged).toBeGreaterThan(0);
    await client.subscribeResource({ uri: "demo://readme" });
    await until(
      () => seen.updated.includes("demo://readme"),
      () => env.upstream().upstream.notify.resourceUpdated("demo://readme"),
    );
    expect(seen.updated).toContain("demo://readme");
    await client.unsubscribeResource({ uri: "demo://readme" });
  });

  it("upstream requests are stateless 2026-07-28 requests with the _meta envelope and the headers", async () => {
    const { client } = await connect(env.urls().gateway);
    await client.callTool({ name: "echo", arguments: { text: "headers" } });
    const posted = env.upstream().recorder.posted();
    const call = posted
      .reverse()
      .find((p) => p.message.method === "tools/call" && JSON.stringify(p.message).includes('"headers"'));
    expect(call).toBeDefined();
    const { message, exchange } = call as NonNullable<typeof call>;
    expect(exchange.headers["mcp-protocol-version"]).toBe("2026-07-28");
    expect(exchange.headers["mcp-method"]).toBe("tools/call");
    expect(exchange.headers["mcp-name"]).toBe("echo");
    expect(exchange.sessionId).toBeUndefined();
    expect((message.params as Record<string, unknown>)._meta).toMatchObject({
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "legacy-front-test", version: "1.0.0" },
      "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} }, sampling: {} },
    });
    // Nothing legacy ever reached the upstream after its refusal of the first initialize.
    expect(posted.filter((p) => p.message.method === "initialize").length).toBeLessThanOrEqual(1);
  });

  it("a session ends with DELETE; its id is then unknown (404), and another caller never finds it", async () => {
    const a = await connect(env.urls().gateway);
    const sessionId = a.transport.sessionId as string;
    const other = await fetch(env.urls().gateway, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
        authorization: "Bearer someone-else",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(other.status).toBe(404);
    await a.transport.terminateSession();
    const after = await fetch(env.urls().gateway, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(after.status).toBe(404);
  });
});

describe('upstream.era "modern": the gateway serves legacy sessions from the first initialize', () => {
  const env = gatewayInFrontOf(
    // Dual-era: it would answer a legacy initialize, but the configured era says not to send one.
    async () => behindRecordingProxy(await startModernUpstream()),
    { beforeAll, afterAll },
    { upstream: { era: "modern" } },
  );

  it("no legacy request ever reaches the upstream", async () => {
    const { client } = await connect(env.urls().gateway);
    expect(await client.callTool({ name: "echo", arguments: { text: "modern only" } })).toEqual({
      content: [{ type: "text", text: "modern only" }],
    });
    const posted = env.upstream().recorder.posted();
    expect(posted.length).toBeGreaterThan(0);
    expect(posted.some((p) => p.message.method === "initialize")).toBe(false);
    expect(posted.every((p) => p.exchange.headers["mcp-protocol-version"] === "2026-07-28")).toBe(true);
  });
});
