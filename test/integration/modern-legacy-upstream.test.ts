// The @modelcontextprotocol/client 2.x Client pinned to MCP 2026-07-28, through
// the gateway, in front of the legacy SDK 1.x fixture (the demo upstream,
// 2025-11-25, sessions). The gateway has to bridge the eras: discover built
// from initialize, resultType/ttlMs/cacheScope stamped, upstream elicitation
// turned into MRTR input_required, subscriptions/listen mapped onto
// resources/subscribe and the session's GET stream, sessions re-opened when
// the upstream forgets them. Whatever the tools answer must equal what an
// SDK 1.x client gets from the upstream directly.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProtocolError, type Progress } from "@modelcontextprotocol/client";
import type { CallToolResult as LegacyCallToolResult, Tool as LegacyTool } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { eraClients } from "../helpers/era-clients.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import {
  MODERN_PROTOCOL_VERSION,
  hasValidCacheHints,
  isRecord,
  requestBodyOf,
  resultIn,
  textOf,
  toolCallExchanges,
} from "../helpers/modern-client.js";

const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
const EVENT_WAIT_MS = 3_000;

const env = gatewayInFrontOf(() => startSdkUpstream({ host: "127.0.0.1", port: 0, touchTool: true }), {
  beforeAll,
  afterAll,
});

/** The reference SDK 1.x client answers elicitation like the modern one. */
const { modern, client, legacy, legacyCall } = eraClients(
  () => env.urls(),
  { onElicit: () => ({ action: "accept", content: { name: "Ada" } }) },
  { afterAll },
);

/** What a legacy tool result and a modern one must share. */
function toolOutcome(r: LegacyCallToolResult | CallToolResultLike): unknown {
  return { content: r.content, structuredContent: r.structuredContent, isError: r.isError ?? false };
}
interface CallToolResultLike {
  content: unknown;
  structuredContent?: unknown;
  isError?: boolean;
}

/** A legacy tool definition as a 2026-07-28 client sees it: `execution` (task support) does not exist there. */
function withoutExecution(t: LegacyTool): Record<string, unknown> {
  const { execution: _dropped, ...rest } = t;
  return rest;
}

describe("2.x client (2026-07-28) → gateway → SDK 1.x upstream (2025-11-25)", () => {
  it("connects with server/discover built from the upstream's initialize", async () => {
    const [h, ref] = [await client(), await legacy()];
    expect(h.client.getProtocolEra()).toBe("modern");
    expect(h.client.getNegotiatedProtocolVersion()).toBe(MODERN_PROTOCOL_VERSION);
    expect(h.client.getServerVersion()).toEqual(ref.client.getServerVersion());
    expect(h.client.getServerVersion()).toMatchObject({ name: "demo-upstream", version: "1.0.0" });
    expect(h.client.getInstructions()).toBe(ref.client.getInstructions());
    const legacyCaps = ref.client.getServerCapabilities();
    expect(legacyCaps).toMatchObject({
      resources: { subscribe: true, listChanged: true },
      tools: { listChanged: true },
    });
    expect(h.client.getServerCapabilities()).toMatchObject(legacyCaps ?? {});
    expect(h.client.getServerCapabilities()).not.toHaveProperty("tasks");

    const discover = h.client.getDiscoverResult();
    expect(discover?.supportedVersions).toContain(MODERN_PROTOCOL_VERSION);
    expect(discover?._meta?.[SERVER_INFO_KEY]).toEqual(ref.client.getServerVersion());
    const wire = h.http.find((x) => requestBodyOf(x)?.["method"] === "server/discover");
    const result = wire && resultIn(wire);
    expect(result).toMatchObject({ resultType: "complete" });
    expect(result !== undefined && hasValidCacheHints(result)).toBe(true);
    expect(h.transport.sessionId).toBeUndefined();
  });

  it("tools/list: the upstream's tools, stamped complete with cache hints", async () => {
    const [h, ref] = [await client(), await legacy()];
    const direct = await ref.client.listTools();
    const tools = await h.client.listTools(undefined, { cacheMode: "refresh" });
    expect(tools.tools.map((t) => t.name)).toEqual([
      "echo",
      "add",
      "slow_task",
      "ask_user",
      "fail",
      "throw_error",
      "notify",
      "touch",
    ]);
    expect(tools.tools).toEqual(direct.tools.map(withoutExecution));
    expect(hasValidCacheHints(tools)).toBe(true);
    const wire = h.http.filter((x) => requestBodyOf(x)?.["method"] === "tools/list").at(-1);
    expect(wire && resultIn(wire)?.["resultType"]).toBe("complete");
  });

  it("tools/call: text, structured content and isError equal the direct answers; results are stamped complete", async () => {
    const h = await client();
    const cases: Array<[string, Record<string, unknown>]> = [
      ["echo", { text: "héllo ✓ — 🚀" }],
      ["add", { a: 40, b: 2 }],
      ["fail", { message: "nope" }],
    ];
    for (const [name, args] of cases) {
      const got = await h.client.callTool({ name, arguments: args });
      expect(toolOutcome(got), name).toEqual(toolOutcome(await legacyCall(name, args)));
      const wire = toolCallExchanges(h.http, name).at(-1);
      expect(wire && resultIn(wire)?.["resultType"], name).toBe("complete");
    }
    const echo = await h.client.callTool({ name: "echo", arguments: { text: "x" } });
    expect(echo.content).toEqual([{ type: "text", text: "x" }]);
  });

  it("JSON-RPC errors stay JSON-RPC errors (tool error, unknown resource)", async () => {
    const h = await client();
    const thrown = await h.client.callTool({ name: "throw_error", arguments: { message: "kaboom" } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(ProtocolError);
    expect(thrown).toMatchObject({ code: -32603, message: expect.stringContaining("kaboom") });
    const missing = await h.client.readResource({ uri: "demo://nope" }, { cacheMode: "refresh" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(missing).toBeInstanceOf(ProtocolError);
    expect(missing).toMatchObject({ code: -32602, message: expect.stringContaining("demo://nope") });
  });

  it("progress of slow_task reaches onprogress exactly as the upstream sent it", async () => {
    const [h, ref] = [await client(), await legacy()];
    const args = { durationMs: 300, steps: 3 };
    const directProgress: unknown[] = [];
    const direct = await ref.client.callTool({ name: "slow_task", arguments: args }, undefined, {
      onprogress: (p) => directProgress.push(p),
    });
    const progress: Progress[] = [];
    const res = await h.client.callTool(
      { name: "slow_task", arguments: args },
      { onprogress: (p) => progress.push(p) },
    );
    expect(progress).toEqual([
      { progress: 1, total: 3, message: "step 1 of 3" },
      { progress: 2, total: 3, message: "step 2 of 3" },
      { progress: 3, total: 3, message: "step 3 of 3" },
    ]);
    expect(progress).toEqual(directProgress);
    expect(res.content).toEqual("content" in direct ? direct.content : undefined);
    expect(textOf(res)).toBe("done after 300 ms in 3 steps");
  });

  it("elicitation: the upstream's elicitation/create becomes an MRTR round; the retry carries the answer back", async () => {
    const h = await client();
    const before = h.events.length;
    const res = await h.client.callTool({ name: "ask_user", arguments: { question: "What is your name?" } });
    expect(res.content).toEqual([{ type: "text", text: 'action: accept; content: {"name":"Ada"}' }]);
    expect(toolOutcome(res)).toEqual(toolOutcome(await legacyCall("ask_user", { question: "What is your name?" })));

    const asked = h.events.slice(before).filter((e) => e.kind === "request");
    expect(asked).toEqual([
      {
        kind: "request",
        method: "elicitation/create",
        params: expect.objectContaining({
          message: "What is your name?",
          requestedSchema: {
            type: "object",
            properties: { name: { type: "string", title: "Name" } },
            required: ["name"],
          },
        }),
      },
    ]);
    // On the wire: input_required (one elicitation, an opaque requestState), then
    // a retry on a new id answering that key and echoing the state.
    const [first, retry] = toolCallExchanges(h.http, "ask_user").slice(-2);
    const ir = first && resultIn(first);
    expect(ir).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    const requests = isRecord(ir) && isRecord(ir["inputRequests"]) ? ir["inputRequests"] : {};
    const keys = Object.keys(requests);
    expect(keys).toHaveLength(1);
    const key = keys[0] ?? "";
    expect(requests[key]).toMatchObject({ method: "elicitation/create", params: { message: "What is your name?" } });
    expect(requests[key]).not.toHaveProperty("id");
    expect(requests[key]).not.toHaveProperty("jsonrpc");
    const retryBody = retry && requestBodyOf(retry);
    expect(retryBody?.["id"]).not.toEqual(first && requestBodyOf(first)?.["id"]);
    expect(retryBody?.["params"]).toMatchObject({
      name: "ask_user",
      inputResponses: { [key]: { action: "accept", content: { name: "Ada" } } },
      requestState: ir?.["requestState"],
    });
    expect(retry && resultIn(retry)?.["resultType"]).toBe("complete");
  });

  it("elicitation honours a declined answer", async () => {
    const h = await modern({ onElicit: () => ({ action: "decline" }) });
    const res = await h.client.callTool({ name: "ask_user", arguments: {} });
    expect(res.content).toEqual([{ type: "text", text: "action: decline; content: no content" }]);
  });

  it("a client without the elicitation capability is never asked (the upstream session sees no elicitation capability)", async () => {
    const h = await modern({ capabilities: { sampling: {} } });
    const res = await h.client.callTool({ name: "ask_user", arguments: {} });
    expect(res).toMatchObject({
      isError: true,
      content: [
        { type: "text", text: "ask_user needs a client that declares the elicitation capability (form mode)." },
      ],
    });
    expect(h.events.filter((e) => e.kind === "request")).toEqual([]);
  });

  it("resources/list, templates/list and resources/read equal the direct answers, with cache hints", async () => {
    const [h, ref] = [await client(), await legacy()];
    const list = await h.client.listResources(undefined, { cacheMode: "refresh" });
    expect(list.resources).toEqual((await ref.client.listResources()).resources);
    expect(hasValidCacheHints(list)).toBe(true);
    const templates = await h.client.listResourceTemplates(undefined, { cacheMode: "refresh" });
    expect(templates.resourceTemplates).toEqual((await ref.client.listResourceTemplates()).resourceTemplates);
    expect(hasValidCacheHints(templates)).toBe(true);
    for (const uri of ["demo://readme", "demo://items/2"]) {
      const read = await h.client.readResource({ uri }, { cacheMode: "refresh" });
      expect(read.contents, uri).toEqual((await ref.client.readResource({ uri })).contents);
      expect(hasValidCacheHints(read), uri).toBe(true);
      const wire = h.http.filter((x) => requestBodyOf(x)?.["method"] === "resources/read").at(-1);
      expect(wire && resultIn(wire)?.["resultType"], uri).toBe("complete");
    }
  });

  it("prompts/list and prompts/get equal the direct answers", async () => {
    const [h, ref] = [await client(), await legacy()];
    const prompts = await h.client.listPrompts(undefined, { cacheMode: "refresh" });
    expect(prompts.prompts).toEqual((await ref.client.listPrompts()).prompts);
    expect(hasValidCacheHints(prompts)).toBe(true);
    const got = await h.client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
    expect(got.messages).toEqual((await ref.client.getPrompt({ name: "greet", arguments: { name: "Ada" } })).messages);
    expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: "Please greet Ada warmly." } }]);
  });

  it("subscriptions/listen maps onto resources/subscribe + the upstream GET stream (touch → updated)", async () => {
    const h = await client();
    const sub = await h.client.listen({ resourcesListChanged: true, resourceSubscriptions: ["demo://readme"] });
    try {
      expect(sub.honoredFilter).toEqual({ resourcesListChanged: true, resourceSubscriptions: ["demo://readme"] });
      const listenPost = h.http.filter((x) => requestBodyOf(x)?.["method"] === "subscriptions/listen").at(-1);
      const listenId = listenPost && requestBodyOf(listenPost)?.["id"];
      const before = h.events.length;
      // demo://items/1 is not subscribed: only its list_changed may come through.
      // The upstream GET stream is ordered, so a wrongly forwarded update for it
      // would arrive before the readme update waited for below.
      expect(textOf(await h.client.callTool({ name: "touch", arguments: { uri: "demo://items/1" } }))).toBe(
        "touched demo://items/1",
      );
      expect(textOf(await h.client.callTool({ name: "touch", arguments: { uri: "demo://readme" } }))).toBe(
        "touched demo://readme",
      );
      await h.waitForEvent(
        (e) =>
          e.method === "notifications/resources/updated" && isRecord(e.params) && e.params["uri"] === "demo://readme",
        EVENT_WAIT_MS,
      );
      const seen = h.events.slice(before);
      const updated = seen.filter((e) => e.method === "notifications/resources/updated");
      expect(updated.map((e) => (isRecord(e.params) ? e.params["uri"] : undefined))).toEqual(["demo://readme"]);
      expect(seen.some((e) => e.method === "notifications/resources/list_changed")).toBe(true);
      // Only what was asked for, and every one stamped with the listen's id.
      for (const e of seen) {
        expect(["notifications/resources/list_changed", "notifications/resources/updated"]).toContain(e.method);
        expect(
          isRecord(e.params) && isRecord(e.params["_meta"]) ? e.params["_meta"][SUBSCRIPTION_ID_KEY] : undefined,
        ).toBe(listenId);
      }
    } finally {
      await sub.close();
    }
    expect(await sub.closed).toBe("local");
  });

  it("subscriptions/listen: a change right after the acknowledgement is delivered (subscribed before the ack)", async () => {
    const h = await modern();
    const sub = await h.client.listen({ resourceSubscriptions: ["demo://items/3"] });
    try {
      expect(sub.honoredFilter).toEqual({ resourceSubscriptions: ["demo://items/3"] });
      // Straight from the upstream, with no client round trip in between: the
      // ack promised the subscription, so the upstream must already know it.
      await env.upstream().touch("demo://items/3");
      const got = await h.waitForEvent((e) => e.method === "notifications/resources/updated", EVENT_WAIT_MS);
      expect(got.params).toMatchObject({ uri: "demo://items/3" });
    } finally {
      await sub.close();
    }
  });

  it("concurrent clients sharing a pooled upstream session each get only their own progress and their own answers", async () => {
    // Same principal and capabilities, so the gateway may pool both onto one
    // upstream session; both clients number their requests (and progress
    // tokens) alike, so the gateway has to keep them apart.
    const [a, b] = await Promise.all([
      modern({ onElicit: () => ({ action: "accept", content: { name: "Ada" } }) }),
      modern({ onElicit: () => ({ action: "accept", content: { name: "Grace" } }) }),
    ]);
    const progressA: Progress[] = [];
    const progressB: Progress[] = [];
    const [slowA, slowB, askA, askB] = await Promise.all([
      a.client.callTool(
        { name: "slow_task", arguments: { durationMs: 150, steps: 3 } },
        { onprogress: (p) => progressA.push(p) },
      ),
      b.client.callTool(
        { name: "slow_task", arguments: { durationMs: 150, steps: 2 } },
        { onprogress: (p) => progressB.push(p) },
      ),
      a.client.callTool({ name: "ask_user", arguments: {} }),
      b.client.callTool({ name: "ask_user", arguments: {} }),
    ]);
    expect(textOf(slowA)).toBe("done after 150 ms in 3 steps");
    expect(textOf(slowB)).toBe("done after 150 ms in 2 steps");
    expect(progressA.map((p) => [p.progress, p.total])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    expect(progressB.map((p) => [p.progress, p.total])).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(textOf(askA)).toBe('action: accept; content: {"name":"Ada"}');
    expect(textOf(askB)).toBe('action: accept; content: {"name":"Grace"}');
  });

  it("an upstream session that expires mid-use is re-opened without the client noticing", async () => {
    const h = await client();
    expect(textOf(await h.client.callTool({ name: "echo", arguments: { text: "before" } }))).toBe("before");
    await env.upstream().dropSessions();
    expect(textOf(await h.client.callTool({ name: "echo", arguments: { text: "after" } }))).toBe("after");
    const tools = await h.client.listTools(undefined, { cacheMode: "refresh" });
    expect(tools.tools.map((t) => t.name)).toContain("touch");
    // MRTR still works on the new session.
    const asked = await h.client.callTool({ name: "ask_user", arguments: {} });
    expect(asked.content).toEqual([{ type: "text", text: 'action: accept; content: {"name":"Ada"}' }]);
  });

  it("an open listen survives the upstream forgetting its session (re-subscribed on the new session)", async () => {
    const h = await modern();
    const sub = await h.client.listen({ resourceSubscriptions: ["demo://readme"] });
    try {
      expect(sub.honoredFilter).toEqual({ resourceSubscriptions: ["demo://readme"] });
      await env.upstream().dropSessions();
      const before = h.events.length;
      const isUpdate = (e: { method: string; params: unknown }): boolean =>
        e.method === "notifications/resources/updated" && isRecord(e.params) && e.params["uri"] === "demo://readme";
      // The gateway notices the lost session in the background; touch until the
      // update comes through (each touch reaches every session subscribed by then).
      let delivered = false;
      for (let attempt = 0; attempt < 20 && !delivered; attempt++) {
        await h.client.callTool({ name: "touch", arguments: { uri: "demo://readme" } });
        delivered = await h.waitForEvent(isUpdate, 250).then(
          () => true,
          () => false,
        );
      }
      expect(delivered, `no resources/updated after re-init; events: ${JSON.stringify(h.events.slice(before))}`).toBe(
        true,
      );
      expect(await Promise.race([sub.closed, Promise.resolve("open")])).toBe("open");
    } finally {
      await sub.close();
    }
  });
});
