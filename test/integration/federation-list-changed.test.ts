// Change notifications through a federated endpoint over the SDK 1.x demo server (legacy: its session GET
// streams) and the SDK 2.x server (modern: its own listen). A 2.x client listens with subscriptions/listen, a
// 1.x client on the endpoint's own session gets them on its GET stream: a tool added upstream while they
// listen reaches both and shows in the next list, resource updates come with the URI the client was shown
// (the second upstream's demo://readme is rewritten, the first keeps it), and the discover answer says which
// lists announce their changes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { connectModernClient, isRecord, requestBodyOf } from "../helpers/modern-client.js";
import { manyConfig, startManyGateway } from "../helpers/many-upstreams.js";
import { modernRpc } from "../helpers/modern-rpc.js";
import type { TestGateway } from "../helpers/gateway.js";
import { pairConfig } from "../helpers/federated-pair.js";

const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
const EVENT_WAIT_MS = 10_000;

let legacy: SdkUpstream;
let modern: ModernUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  legacy = await startSdkUpstream();
  modern = await startModernUpstream();
  gateway = await startManyGateway(config(["one", "two"]));
});

afterAll(async () => {
  await gateway?.close();
  await legacy?.close();
  await modern?.close();
});

const fed = () => `${gateway.url}/pair`;

function config(members: string[]) {
  return manyConfig(pairConfig(legacy.url, modern.url, members));
}

/** Repeats `poke` until `done` holds: a legacy session's GET stream reaches the members asynchronously (bounded). */
async function until(done: () => boolean, poke: () => void): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) {
    poke();
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("list_changed through a federated endpoint", () => {
  it("server/discover says the lists announce their changes when a member's do", async () => {
    const { body } = await modernRpc(fed(), "server/discover", {});
    const caps = (body.result as { capabilities: Record<string, Record<string, unknown>> }).capabilities;
    for (const kind of ["tools", "prompts", "resources"]) expect(caps[kind]?.listChanged, kind).toBe(true);
  });

  it("a tool added upstream while a 2.x client listens: one notification, stamped, and the tool in the next list", async () => {
    const h = await connectModernClient(fed());
    const sub = await h.client.listen({ toolsListChanged: true });
    try {
      expect(sub.honoredFilter).toEqual({ toolsListChanged: true });
      const listenId = requestBodyOf(
        h.http.filter((x) => requestBodyOf(x)?.["method"] === "subscriptions/listen").at(-1) as never,
      )?.["id"];
      const before = h.events.length;
      modern.addTool("late_tool");
      const got = await h.waitForEvent((e) => e.method === "notifications/tools/list_changed", EVENT_WAIT_MS);
      expect(isRecord(got.params) && isRecord(got.params["_meta"]) && got.params["_meta"][SUBSCRIPTION_ID_KEY]).toBe(
        listenId,
      );
      // Nothing else was asked for: only tool list changes come.
      expect(h.events.slice(before).every((e) => e.method === "notifications/tools/list_changed")).toBe(true);
      const names = (await h.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
      expect(names).toContain("two__late_tool");
      const called = await h.client.callTool({ name: "two__late_tool", arguments: { text: "hi" } });
      expect(called.content).toEqual([{ type: "text", text: "late_tool: hi" }]);
    } finally {
      await sub.close();
      await h.close();
    }
  });

  it("resource updates of both members carry the URI the client was shown; a legacy member's list change comes too", async () => {
    const h = await connectModernClient(fed());
    try {
      const uris = (await h.client.listResources(undefined, { cacheMode: "refresh" })).resources.map((r) => r.uri);
      const rewritten = `mcp-fed://two/${encodeURIComponent("demo://readme")}`;
      expect(uris).toContain("demo://readme");
      expect(uris).toContain(rewritten);
      const sub = await h.client.listen({
        resourcesListChanged: true,
        resourceSubscriptions: ["demo://readme", rewritten, "demo://never-listed"],
      });
      try {
        expect(sub.honoredFilter).toEqual({
          resourcesListChanged: true,
          resourceSubscriptions: ["demo://readme", rewritten],
        });
        await legacy.touch("demo://readme");
        await h.waitForEvent(
          (e) =>
            e.method === "notifications/resources/updated" && isRecord(e.params) && e.params["uri"] === "demo://readme",
          EVENT_WAIT_MS,
        );
        await h.waitForEvent((e) => e.method === "notifications/resources/list_changed", EVENT_WAIT_MS);
        modern.notify.resourceUpdated("demo://readme");
        await h.waitForEvent(
          (e) => e.method === "notifications/resources/updated" && isRecord(e.params) && e.params["uri"] === rewritten,
          EVENT_WAIT_MS,
        );
        const updated = h.events
          .filter((e) => e.method === "notifications/resources/updated")
          .map((e) => (isRecord(e.params) ? e.params["uri"] : undefined));
        expect(updated.every((u) => u === "demo://readme" || u === rewritten)).toBe(true);
      } finally {
        await sub.close();
      }
    } finally {
      await h.close();
    }
  });

  it("a 1.x client on the endpoint's session hears a tool added upstream on its GET stream", async () => {
    const client = new Client({ name: "federated-list-changed", version: "1.0.0" }, { capabilities: {} });
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed += 1;
    });
    const transport = new StreamableHTTPClientTransport(new URL(fed()));
    await client.connect(transport);
    try {
      modern.addTool("later_tool");
      await until(
        () => changed > 0,
        () => modern.notify.toolsChanged(),
      );
      expect(changed).toBeGreaterThan(0);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("two__later_tool");
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it("a reload that takes a member out tells listeners the lists changed; the member's tools are gone from them", async () => {
    const h = await connectModernClient(fed());
    const sub = await h.client.listen({ toolsListChanged: true });
    try {
      gateway.reload(config(["one"]));
      await h.waitForEvent((e) => e.method === "notifications/tools/list_changed", EVENT_WAIT_MS);
      const names = (await h.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
      expect(names.some((n) => n.startsWith("two__"))).toBe(false);
      expect(names).toContain("one__echo");
    } finally {
      gateway.reload(config(["one", "two"]));
      await sub.close();
      await h.close();
    }
  });
});
