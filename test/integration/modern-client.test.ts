// The @modelcontextprotocol/client 2.x Client pinned to MCP 2026-07-28 against
// the modern (@modelcontextprotocol/server 2.x) fixture, once directly and once
// through the gateway. A modern upstream is forwarded as is, so everything the
// client sees through the gateway must equal what it sees directly.
// Also: SDK 1.x (2025-11-25) clients through the gateway in front of a
// modern upstream, dual-era (works) and modern-only (the gateway serves the legacy session itself).
// The legacy upstreams are in modern-legacy-upstream.test.ts and
// modern-everything.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Progress } from "@modelcontextprotocol/client";
import {
  GREET_NAMES,
  MODERN_INSTRUCTIONS,
  MODERN_README,
  MODERN_SERVER_INFO,
  SAMPLE_QUESTION,
  startModernUpstream,
} from "../fixtures/modern-upstream.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import {
  DEFAULT_MODERN_SAMPLE_RESULT,
  MODERN_PROTOCOL_VERSION,
  cacheHintsOf,
  connectModernClient,
  hasValidCacheHints,
  isRecord,
  messageOf,
  requestBodyOf,
  resultIn,
  textOf,
  toolCallExchanges,
  type ModernClientHandle,
  type ModernClientOptions,
} from "../helpers/modern-client.js";
import { connectSdkClient } from "../helpers/sdk-client.js";

const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
/** How long to wait for a notification that should arrive (it normally takes milliseconds). */
const EVENT_WAIT_MS = 3_000;

const env = gatewayInFrontOf(() => startModernUpstream(), { beforeAll, afterAll });
const clients: ModernClientHandle[] = [];

// Registered after the gateway's hooks, so (after-hooks run in reverse) the clients close before the gateway and upstream.
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});

const urls = {
  direct: () => env.urls().direct,
  gateway: () => env.urls().gateway,
};

async function connect(url: string, opts?: ModernClientOptions): Promise<ModernClientHandle> {
  const h = await connectModernClient(url, opts);
  clients.push(h);
  return h;
}

/** One connection per route, made on first use and shared by that route's tests. */
function sharedClient(url: () => string): () => Promise<ModernClientHandle> {
  let pending: Promise<ModernClientHandle> | undefined;
  return () => (pending ??= connect(url()));
}

/** The results a modern client gets for the fixture's whole surface, in one pass. */
async function surfaceOf(h: ModernClientHandle): Promise<Record<string, unknown>> {
  const c = h.client;
  return {
    serverVersion: c.getServerVersion(),
    instructions: c.getInstructions(),
    capabilities: c.getServerCapabilities(),
    tools: await c.listTools(undefined, { cacheMode: "refresh" }),
    echo: await c.callTool({ name: "echo", arguments: { text: "héllo ✓ — 🚀" } }),
    fail: await c.callTool({ name: "fail", arguments: {} }),
    ask: await c.callTool({ name: "ask", arguments: {} }),
    sample: await c.callTool({ name: "sample", arguments: {} }),
    resources: await c.listResources(undefined, { cacheMode: "refresh" }),
    templates: await c.listResourceTemplates(undefined, { cacheMode: "refresh" }),
    read: await c.readResource({ uri: "demo://readme" }, { cacheMode: "refresh" }),
    prompts: await c.listPrompts(undefined, { cacheMode: "refresh" }),
    prompt: await c.getPrompt({ name: "greet", arguments: { name: "Ada" } }),
    completion: await c.complete({
      ref: { type: "ref/prompt", name: "greet" },
      argument: { name: "name", value: "Al" },
    }),
  };
}

describe.each([
  { route: "directly", url: urls.direct },
  { route: "through the gateway", url: urls.gateway },
] as const)("2.x client (2026-07-28) → modern 2.x upstream, $route", ({ url }) => {
  const client = sharedClient(url);

  it("connects with server/discover: serverInfo, capabilities, instructions, no session", async () => {
    const h = await client();
    expect(h.client.getProtocolEra()).toBe("modern");
    expect(h.client.getNegotiatedProtocolVersion()).toBe(MODERN_PROTOCOL_VERSION);
    expect(h.client.getServerVersion()).toMatchObject(MODERN_SERVER_INFO);
    expect(h.client.getInstructions()).toBe(MODERN_INSTRUCTIONS);
    expect(h.client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      logging: {},
      completions: {},
    });
    const discover = h.client.getDiscoverResult();
    expect(discover?.supportedVersions).toContain(MODERN_PROTOCOL_VERSION);
    expect(discover?._meta?.[SERVER_INFO_KEY]).toMatchObject(MODERN_SERVER_INFO);
    // A modern connection never initializes, opens a GET stream or gets a session.
    const first = h.http[0];
    expect(first && requestBodyOf(first)?.["method"]).toBe("server/discover");
    expect(first?.status).toBe(200);
    expect(h.http.some((x) => x.method !== "POST")).toBe(false);
    expect(h.http.some((x) => requestBodyOf(x)?.["method"] === "initialize")).toBe(false);
    expect(h.transport.sessionId).toBeUndefined();
  });

  it("tools/list carries the tools and the upstream's cache hints", async () => {
    const h = await client();
    const tools = await h.client.listTools(undefined, { cacheMode: "refresh" });
    expect(tools.tools.map((t) => t.name)).toEqual(["echo", "slow", "ask", "sample", "fail"]);
    expect(cacheHintsOf(tools)).toEqual({ ttlMs: 60_000, cacheScope: "public" });
  });

  it("tools/call: text, isError, and resultType complete on the wire", async () => {
    const h = await client();
    const echo = await h.client.callTool({ name: "echo", arguments: { text: "héllo ✓ — 🚀" } });
    expect(echo.content).toEqual([{ type: "text", text: "héllo ✓ — 🚀" }]);
    expect(echo.isError).toBeFalsy();
    expect(echo._meta?.[SERVER_INFO_KEY]).toMatchObject(MODERN_SERVER_INFO);
    const wire = toolCallExchanges(h.http, "echo").at(-1);
    expect(wire && resultIn(wire)?.["resultType"]).toBe("complete");

    const fail = await h.client.callTool({ name: "fail", arguments: {} });
    expect(fail).toMatchObject({ isError: true, content: [{ type: "text", text: "this tool always fails" }] });
  });

  it("progress notifications of a slow tool reach onprogress, in order", async () => {
    const h = await client();
    const progress: Progress[] = [];
    const res = await h.client.callTool(
      { name: "slow", arguments: { steps: 3 } },
      { onprogress: (p) => progress.push(p) },
    );
    expect(textOf(res)).toBe("done in 3 steps");
    expect(progress).toEqual([
      { progress: 1, total: 3, message: "step 1 of 3" },
      { progress: 2, total: 3, message: "step 2 of 3" },
      { progress: 3, total: 3, message: "step 3 of 3" },
    ]);
  });

  it("notifications/message only when the request opts in with a log level at or below the message's", async () => {
    const h = await client();
    const logsOf = (text: string): unknown[] =>
      h.events
        .filter(
          (e) => e.method === "notifications/message" && isRecord(e.params) && e.params["data"] === `echo ${text}`,
        )
        .map((e) => e.params);
    await h.client.callTool({ name: "echo", arguments: { text: "quiet" } });
    await h.client.callTool({
      name: "echo",
      arguments: { text: "too-low" },
      _meta: { "io.modelcontextprotocol/logLevel": "error" },
    });
    await h.client.callTool({
      name: "echo",
      arguments: { text: "loud" },
      _meta: { "io.modelcontextprotocol/logLevel": "debug" },
    });
    await h.waitForEvent(
      (e) => e.method === "notifications/message" && isRecord(e.params) && e.params["data"] === "echo loud",
      EVENT_WAIT_MS,
    );
    expect(logsOf("loud")).toEqual([{ level: "info", data: "echo loud" }]);
    expect(logsOf("quiet")).toEqual([]);
    expect(logsOf("too-low")).toEqual([]);
  });

  it("elicitation through MRTR: input_required, the client's handler, then the retry's answer", async () => {
    const h = await client();
    const before = h.events.length;
    const res = await h.client.callTool({ name: "ask", arguments: {} });
    expect(res.content).toEqual([{ type: "text", text: "hello Ada" }]);
    const asked = h.events.slice(before).filter((e) => e.kind === "request");
    expect(asked).toEqual([
      {
        kind: "request",
        method: "elicitation/create",
        params: expect.objectContaining({
          message: "What is your name?",
          requestedSchema: expect.objectContaining({ type: "object", required: ["name"] }),
        }),
      },
    ]);
    const [first, retry] = toolCallExchanges(h.http, "ask").slice(-2);
    expect(first && resultIn(first)).toMatchObject({ resultType: "input_required", requestState: "ask:1" });
    const retryParams = retry && requestBodyOf(retry)?.["params"];
    expect(retryParams).toMatchObject({
      inputResponses: { name: { action: "accept", content: { name: "Ada" } } },
      requestState: "ask:1",
    });
  });

  it("elicitation through MRTR honours a declined answer", async () => {
    const h = await connect(url(), { onElicit: () => ({ action: "decline" }) });
    const res = await h.client.callTool({ name: "ask", arguments: {} });
    expect(res.content).toEqual([{ type: "text", text: "no name (decline)" }]);
  });

  it("sampling through MRTR: the client's model answers sampling/createMessage", async () => {
    const h = await client();
    const before = h.events.length;
    const res = await h.client.callTool({ name: "sample", arguments: {} });
    expect(res.content).toEqual([{ type: "text", text: `model ${DEFAULT_MODERN_SAMPLE_RESULT.model} said: Paris` }]);
    const asked = h.events.slice(before).filter((e) => e.kind === "request");
    expect(asked).toEqual([
      {
        kind: "request",
        method: "sampling/createMessage",
        params: expect.objectContaining({
          messages: [{ role: "user", content: { type: "text", text: SAMPLE_QUESTION } }],
          maxTokens: 50,
        }),
      },
    ]);
  });

  it("resources/list and resources/read carry content and cache hints", async () => {
    const h = await client();
    const list = await h.client.listResources(undefined, { cacheMode: "refresh" });
    expect(list.resources).toEqual([
      expect.objectContaining({ uri: "demo://readme", name: "readme", mimeType: "text/markdown" }),
    ]);
    expect(cacheHintsOf(list)).toEqual({ ttlMs: 30_000, cacheScope: "public" });
    const read = await h.client.readResource({ uri: "demo://readme" }, { cacheMode: "refresh" });
    expect(read.contents).toEqual([{ uri: "demo://readme", mimeType: "text/markdown", text: MODERN_README }]);
    expect(cacheHintsOf(read)).toEqual({ ttlMs: 5_000, cacheScope: "private" });
  });

  it("prompts/list, prompts/get and completion/complete on the prompt's argument", async () => {
    const h = await client();
    const prompts = await h.client.listPrompts(undefined, { cacheMode: "refresh" });
    expect(prompts.prompts).toEqual([
      expect.objectContaining({
        name: "greet",
        arguments: [expect.objectContaining({ name: "name", required: true })],
      }),
    ]);
    expect(hasValidCacheHints(prompts)).toBe(true);
    const got = await h.client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
    expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: "Please greet Ada warmly." } }]);
    const completion = await h.client.complete({
      ref: { type: "ref/prompt", name: "greet" },
      argument: { name: "name", value: "Al" },
    });
    expect(completion.completion.values).toEqual(GREET_NAMES.filter((n) => n.startsWith("Al")));
  });

  it("subscriptions/listen: ack first, then only the requested notifications, stamped with the subscription id", async () => {
    const h = await client();
    const sub = await h.client.listen({ resourcesListChanged: true, resourceSubscriptions: ["demo://readme"] });
    try {
      expect(sub.honoredFilter).toEqual({ resourcesListChanged: true, resourceSubscriptions: ["demo://readme"] });
      const listenPost = h.http.filter((x) => requestBodyOf(x)?.["method"] === "subscriptions/listen").at(-1);
      const listenId = listenPost && requestBodyOf(listenPost)?.["id"];
      expect(typeof listenId).toBe("string");

      const before = h.events.length;
      const fx = env.upstream();
      // Not requested: tools list changes and updates of other resources. The
      // stream is ordered, so anything wrongly forwarded arrives before the
      // last event waited for below.
      fx.notify.toolsChanged();
      fx.notify.resourceUpdated("demo://elsewhere");
      fx.notify.resourcesChanged();
      fx.notify.resourceUpdated("demo://readme");
      await h.waitForEvent(
        (e) =>
          e.method === "notifications/resources/updated" && isRecord(e.params) && e.params["uri"] === "demo://readme",
        EVENT_WAIT_MS,
      );
      const seen = h.events.slice(before);
      expect(seen.map((e) => [e.method, isRecord(e.params) ? e.params["uri"] : undefined])).toEqual([
        ["notifications/resources/list_changed", undefined],
        ["notifications/resources/updated", "demo://readme"],
      ]);
      for (const e of seen) {
        expect(
          isRecord(e.params) && isRecord(e.params["_meta"]) ? e.params["_meta"][SUBSCRIPTION_ID_KEY] : undefined,
        ).toBe(listenId);
      }
    } finally {
      await sub.close();
    }
    expect(await sub.closed).toBe("local");
  });
});

describe("2.x client → modern upstream: through the gateway equals directly", () => {
  it("the whole surface (discover, lists with cache hints, calls, MRTR, reads, prompts, completion) is identical", async () => {
    const direct = await connect(urls.direct());
    const viaGateway = await connect(urls.gateway());
    const [a, b] = [await surfaceOf(direct), await surfaceOf(viaGateway)];
    expect(a["ask"]).toMatchObject({ content: [{ type: "text", text: "hello Ada" }] });
    // The one intended difference: the gateway advertises the Tasks extension it serves in front of this upstream.
    const caps = (s: Record<string, unknown>): Record<string, unknown> =>
      (s["capabilities"] ?? {}) as Record<string, unknown>;
    expect(caps(b)["extensions"]).toEqual({ "io.modelcontextprotocol/tasks": {} });
    const { extensions: _tasks, ...rest } = caps(b);
    expect({ ...b, capabilities: rest }).toEqual(a);
    // The discover result the client negotiated from, too, except that the gateway adds the Tasks
    // extension it serves in front of an upstream that has none of its own.
    const viaDiscover = viaGateway.client.getDiscoverResult() as {
      capabilities: { extensions?: Record<string, unknown> };
    };
    expect(viaDiscover.capabilities.extensions).toEqual({ "io.modelcontextprotocol/tasks": {} });
    const { extensions: _added, ...viaCaps } = viaDiscover.capabilities;
    expect({ ...viaDiscover, capabilities: viaCaps }).toEqual(direct.client.getDiscoverResult());
  });
});

describe("SDK 1.x client (2025-11-25) through the gateway in front of a modern upstream", () => {
  it("a dual-era upstream answers it like directly", async () => {
    const run = async (u: string): Promise<unknown> => {
      const h = await connectSdkClient(u);
      try {
        return {
          serverInfo: h.client.getServerVersion(),
          echo: await h.client.callTool({ name: "echo", arguments: { text: "legacy hello" } }),
        };
      } finally {
        await h.close();
      }
    };
    const direct = await run(urls.direct());
    expect(direct).toMatchObject({
      serverInfo: MODERN_SERVER_INFO,
      echo: { content: [{ type: "text", text: "legacy hello" }] },
    });
    expect(await run(urls.gateway())).toEqual(direct);
  });

  describe("a modern-only upstream (legacy: reject)", () => {
    const strict = gatewayInFrontOf(() => startModernUpstream({ legacy: "reject" }), { beforeAll, afterAll });

    const refusal = async (u: string): Promise<unknown> =>
      await connectSdkClient(u).then(
        async (h) => {
          await h.close();
          return undefined;
        },
        (e: unknown) => e,
      );

    it("the legacy client, refused by the upstream itself, connects through the gateway (which serves its session)", async () => {
      // The upstream's own answer names the mismatch ("Unsupported protocol version: 2025-11-25") …
      const direct = messageOf(await refusal(strict.urls().direct));
      expect(direct).toMatch(/2026-07-28/);
      // … the gateway serves the legacy session itself (test/integration/bridge-to-modern.test.ts covers it).
      expect(await refusal(strict.urls().gateway)).toBeUndefined();
    });

    it("a modern client still works through the gateway", async () => {
      const h = await connect(strict.urls().gateway);
      expect(h.client.getServerVersion()).toMatchObject(MODERN_SERVER_INFO);
      const echo = await h.client.callTool({ name: "echo", arguments: { text: "still fine" } });
      expect(echo.content).toEqual([{ type: "text", text: "still fine" }]);
    });
  });
});
