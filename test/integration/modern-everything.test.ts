// The @modelcontextprotocol/client 2.x Client pinned to MCP 2026-07-28, through
// the gateway, in front of the real @modelcontextprotocol/server-everything
// (2025-11-25, sessions). The bar: the modern SDK client works against
// server-everything through the gateway, including its elicitation and
// sampling tools. Tool results must equal what an SDK 1.x client gets from
// server-everything directly when both answer input requests the same way.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Progress } from "@modelcontextprotocol/client";
import { eraClients } from "../helpers/era-clients.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import {
  DEFAULT_MODERN_ELICIT_RESULT,
  DEFAULT_MODERN_SAMPLE_RESULT,
  MODERN_PROTOCOL_VERSION,
  hasValidCacheHints,
  isRecord,
  requestBodyOf,
  resultIn,
  textOf,
  toolCallExchanges,
} from "../helpers/modern-client.js";
import { startServerEverything } from "../helpers/server-everything.js";

const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
const EVENT_WAIT_MS = 4_000;
const STATIC_DOC = "demo://resource/static/document/architecture.md";

const env = gatewayInFrontOf(() => startServerEverything(), { beforeAll, afterAll });

/** The reference SDK 1.x client (straight to server-everything) answers input requests like the modern one. */
const { client, legacy, legacyCall } = eraClients(
  () => env.urls(),
  { onElicit: () => DEFAULT_MODERN_ELICIT_RESULT, onSample: () => DEFAULT_MODERN_SAMPLE_RESULT },
  { afterAll },
);

describe("2.x client (2026-07-28) → gateway → server-everything (2025-11-25)", () => {
  it("connects with server/discover built from server-everything's initialize", async () => {
    const [h, ref] = [await client(), await legacy()];
    expect(h.client.getProtocolEra()).toBe("modern");
    expect(h.client.getServerVersion()).toMatchObject({ name: "mcp-servers/everything" });
    expect(h.client.getServerVersion()).toEqual(ref.client.getServerVersion());
    expect(h.client.getInstructions()).toBe(ref.client.getInstructions());
    expect(h.client.getInstructions()?.length).toBeGreaterThan(0);
    // Everything but the legacy `tasks` capability, which has no 2026-07-28 meaning.
    const { tasks: legacyTasks, ...legacyCaps } = ref.client.getServerCapabilities() ?? {};
    expect(legacyTasks).toBeDefined();
    expect(h.client.getServerCapabilities()).toMatchObject(legacyCaps);
    expect(h.client.getServerCapabilities()).not.toHaveProperty("tasks");
    const discover = h.client.getDiscoverResult();
    expect(discover?.supportedVersions).toContain(MODERN_PROTOCOL_VERSION);
    expect(discover?._meta?.[SERVER_INFO_KEY]).toEqual(ref.client.getServerVersion());
  });

  it("tools/list includes the capability-gated tools (the gateway completed initialize + initialized)", async () => {
    const [h, ref] = [await client(), await legacy()];
    const tools = await h.client.listTools(undefined, { cacheMode: "refresh" });
    const names = tools.tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "echo",
        "trigger-long-running-operation",
        "trigger-elicitation-request",
        "trigger-sampling-request",
      ]),
    );
    expect([...names].sort()).toEqual((await ref.client.listTools()).tools.map((t) => t.name).sort());
    expect(hasValidCacheHints(tools)).toBe(true);
  });

  it("tools/call echo equals the direct answer and is stamped complete", async () => {
    const h = await client();
    const res = await h.client.callTool({ name: "echo", arguments: { message: "héllo ✓" } });
    expect(res.content).toEqual([{ type: "text", text: "Echo: héllo ✓" }]);
    expect(res.content).toEqual((await legacyCall("echo", { message: "héllo ✓" })).content);
    const wire = toolCallExchanges(h.http, "echo").at(-1);
    expect(wire && resultIn(wire)?.["resultType"]).toBe("complete");
  });

  it("progress of trigger-long-running-operation reaches onprogress", async () => {
    const h = await client();
    const progress: Progress[] = [];
    const res = await h.client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
      { onprogress: (p) => progress.push(p) },
    );
    expect(textOf(res)).toBe("Long running operation completed. Duration: 0.3 seconds, Steps: 3.");
    expect(progress).toEqual([
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
      { progress: 3, total: 3 },
    ]);
  });

  it("resources/list and resources/read equal the direct answers, with cache hints", async () => {
    const [h, ref] = [await client(), await legacy()];
    const list = await h.client.listResources(undefined, { cacheMode: "refresh" });
    const directFirstPage = (await ref.client.listResources()).resources;
    expect(directFirstPage.length).toBeGreaterThan(0);
    expect(list.resources).toEqual(expect.arrayContaining(directFirstPage));
    expect(hasValidCacheHints(list)).toBe(true);
    const read = await h.client.readResource({ uri: STATIC_DOC }, { cacheMode: "refresh" });
    expect(read.contents).toEqual((await ref.client.readResource({ uri: STATIC_DOC })).contents);
    expect(read.contents[0]).toMatchObject({ uri: STATIC_DOC });
    expect(hasValidCacheHints(read)).toBe(true);
  });

  it("prompts/list and prompts/get equal the direct answers", async () => {
    const [h, ref] = [await client(), await legacy()];
    const prompts = await h.client.listPrompts(undefined, { cacheMode: "refresh" });
    expect(prompts.prompts).toEqual((await ref.client.listPrompts()).prompts);
    expect(hasValidCacheHints(prompts)).toBe(true);
    const simple = await h.client.getPrompt({ name: "simple-prompt" });
    expect(simple.messages).toEqual([
      { role: "user", content: { type: "text", text: "This is a simple prompt without arguments." } },
    ]);
    const args = { department: "Engineering", name: "Alice" };
    const got = await h.client.getPrompt({ name: "completable-prompt", arguments: args });
    expect(got.messages).toEqual(
      (await ref.client.getPrompt({ name: "completable-prompt", arguments: args })).messages,
    );
  });

  it("completion/complete on a prompt argument (with context) and on a resource template variable", async () => {
    const [h, ref] = [await client(), await legacy()];
    const cases = [
      { ref: { type: "ref/prompt", name: "completable-prompt" }, argument: { name: "department", value: "E" } },
      {
        ref: { type: "ref/prompt", name: "completable-prompt" },
        argument: { name: "name", value: "A" },
        context: { arguments: { department: "Engineering" } },
      },
      {
        ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" },
        argument: { name: "resourceId", value: "7" },
      },
    ] as const;
    const got = [];
    for (const params of cases) {
      const res = await h.client.complete(params);
      expect(res.completion.values, JSON.stringify(params)).toEqual(
        (await ref.client.complete(params)).completion.values,
      );
      got.push(res.completion.values);
    }
    expect(got).toEqual([["Engineering"], ["Alice"], ["7"]]);
  });

  it("elicitation: trigger-elicitation-request becomes an MRTR round and ends with the client's answer", async () => {
    const h = await client();
    const before = h.events.length;
    const res = await h.client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    const asked = h.events.slice(before).filter((e) => e.kind === "request");
    expect(asked).toEqual([
      {
        kind: "request",
        method: "elicitation/create",
        params: expect.objectContaining({
          message: "Please provide inputs for the following fields:",
          requestedSchema: expect.objectContaining({ type: "object", required: ["name"] }),
        }),
      },
    ]);
    expect(textOf(res)).toContain("✅ User provided the requested information!");
    expect(textOf(res)).toContain("- Name: Ada");
    expect(res.content).toEqual((await legacyCall("trigger-elicitation-request", {})).content);
    const first = toolCallExchanges(h.http, "trigger-elicitation-request").at(-2);
    expect(first && resultIn(first)).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
  });

  it("sampling: trigger-sampling-request becomes an MRTR round and ends with the client's model answer", async () => {
    const h = await client();
    const before = h.events.length;
    const args = { prompt: "Capital of France?", maxTokens: 20 };
    const res = await h.client.callTool({ name: "trigger-sampling-request", arguments: args });
    const asked = h.events.slice(before).filter((e) => e.kind === "request");
    expect(asked).toEqual([
      {
        kind: "request",
        method: "sampling/createMessage",
        params: expect.objectContaining({
          messages: [
            {
              role: "user",
              content: { type: "text", text: "Resource trigger-sampling-request context: Capital of France?" },
            },
          ],
          systemPrompt: "You are a helpful test server.",
          maxTokens: 20,
          temperature: 0.7,
        }),
      },
    ]);
    expect(textOf(res)).toContain("LLM sampling result:");
    expect(textOf(res)).toContain('"text": "Paris"');
    expect(res.content).toEqual((await legacyCall("trigger-sampling-request", args)).content);
    const first = toolCallExchanges(h.http, "trigger-sampling-request").at(-2);
    expect(first && resultIn(first)).toMatchObject({ resultType: "input_required" });
  });

  it("subscriptions/listen: honoured per server-everything's capabilities; subscribed updates arrive, its logs do not", async () => {
    const h = await client();
    const filter = {
      toolsListChanged: true,
      promptsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: [STATIC_DOC],
    };
    const sub = await h.client.listen(filter);
    let toggled = false;
    try {
      expect(sub.honoredFilter).toEqual(filter);
      const listenPost = h.http.filter((x) => requestBodyOf(x)?.["method"] === "subscriptions/listen").at(-1);
      const listenId = listenPost && requestBodyOf(listenPost)?.["id"];
      const before = h.events.length;
      // server-everything sends an update for every subscribed URI of the
      // session right away (then every 5 s) once this is toggled on; the
      // gateway's pooled session is the one its listen subscribed on.
      const toggle = await h.client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
      toggled = true;
      expect(textOf(toggle)).toMatch(/^Started simulated resource updated notifications/);
      await h.waitForEvent(
        (e) => e.method === "notifications/resources/updated" && isRecord(e.params) && e.params["uri"] === STATIC_DOC,
        EVENT_WAIT_MS,
      );
      const seen = h.events.slice(before);
      // Session-wide logs (e.g. the subscribe acknowledgement) never reach a listen.
      expect(seen.filter((e) => e.method === "notifications/message")).toEqual([]);
      for (const e of seen) {
        expect(
          isRecord(e.params) && isRecord(e.params["_meta"]) ? e.params["_meta"][SUBSCRIPTION_ID_KEY] : undefined,
        ).toBe(listenId);
      }
    } finally {
      if (toggled) await h.client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
      await sub.close();
    }
    expect(await sub.closed).toBe("local");
  });
});
