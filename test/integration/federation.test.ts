// A federated endpoint (federated.<name>) over the SDK 1.x demo server (legacy, HTTP) and the SDK 2.x
// modern-only server, both with a tool named echo, driven by the SDK 2.x client: merged lists with every name
// prefixed by its upstream, calls routed back under each upstream's own policy, tasks served on the federated
// endpoint and on their upstream's route, pages that span the upstreams, and a member that is down left out.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { connectModernClient, textOf } from "../helpers/modern-client.js";
import { expectUnknownTaskOn, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, modernRpc } from "../helpers/modern-rpc.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import type { TestGateway } from "../helpers/gateway.js";

let legacy: SdkUpstream;
let modern: ModernUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  legacy = await startSdkUpstream();
  modern = await startModernUpstream();
  gateway = await startManyGateway({
    upstreams: {
      one: { url: legacy.url },
      two: { url: modern.url, era: "modern" },
      // Nothing listens there: a member that is down.
      down: { url: "http://127.0.0.1:9/mcp", connectTimeoutMs: 500 },
    },
    federated: { all: { upstreams: ["one", "two", "down"] }, pair: { upstreams: ["one", "two"] } },
    access: { rules: [{ upstream: "two", tools: "fail", effect: "deny" }] },
    tasks: { rules: [{ upstream: "one", tool: "slow_task", mode: "always" }] },
    federation: { listTimeoutMs: 2_000 },
  });
});

afterAll(async () => {
  await gateway?.close();
  await legacy?.close();
  await modern?.close();
});

const fed = (name: string) => `${gateway.url}/${name}`;

describe("a federated endpoint over a legacy and a modern upstream", () => {
  it("lists every member's tools, each prefixed with its upstream, both echo tools side by side", async () => {
    const client = await connectModernClient(fed("pair"));
    try {
      const direct = await connectModernClient(`${gateway.url}/one`);
      const own = (await direct.client.listTools()).tools.map((t) => t.name);
      await direct.close();
      const names = (await client.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("one__echo");
      expect(names).toContain("two__echo");
      for (const name of own) expect(names).toContain(`one__${name}`);
      expect(names.every((n) => n.startsWith("one__") || n.startsWith("two__"))).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("routes a call to the upstream its name names, with the upstream's own name, and answers as that route does", async () => {
    const client = await connectModernClient(fed("pair"));
    const direct = await connectModernClient(`${gateway.url}/two`);
    try {
      await client.client.listTools();
      const viaFed = (await client.client.callTool({ name: "two__echo", arguments: { text: "hi" } })) as CallToolResult;
      const viaRoute = (await direct.client.callTool({ name: "echo", arguments: { text: "hi" } })) as CallToolResult;
      expect(textOf(viaFed)).toBe(textOf(viaRoute));
      const legacyEcho = (await client.client.callTool({
        name: "one__echo",
        arguments: { text: "hey" },
      })) as CallToolResult;
      expect(textOf(legacyEcho)).toContain("hey");
    } finally {
      await client.close();
      await direct.close();
    }
  });

  it("applies the member's access rules: a denied tool is absent from the list and refused on call", async () => {
    const client = await connectModernClient(fed("pair"));
    try {
      const names = (await client.client.listTools()).tools.map((t) => t.name);
      expect(names).not.toContain("two__fail");
      await expect(client.client.callTool({ name: "two__fail", arguments: {} })).rejects.toThrow();
    } finally {
      await client.close();
    }
  });

  it("leaves a member that is down out of the lists; the others answer", async () => {
    const client = await connectModernClient(fed("all"));
    try {
      const names = (await client.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("one__echo");
      expect(names).toContain("two__echo");
      expect(names.some((n) => n.startsWith("down__"))).toBe(false);
    } finally {
      await client.close();
    }
  });

  it("counts a federated list once, on the endpoint, however many members it asks", async () => {
    const scrape = async () => parseExposition(await (await fetch(`${gateway.origin}/metrics`)).text());
    // Answered from every member: under no one upstream.
    const labels = { route: "mcp", upstream: "(none)", era: "modern", method: "tools/list", status: "200" };
    const before = value(await scrape(), "mcp_gateway_requests_total", labels) ?? 0;
    const answer = await modernRpc(fed("all"), "tools/list", {});
    expect(answer.status).toBe(200);
    expect(value(await scrape(), "mcp_gateway_requests_total", labels)).toBe(before + 1);
  });

  it("merges server/discover: the members' capabilities, under the endpoint's own serverInfo", async () => {
    const answer = await modernRpc(fed("pair"), "server/discover", {});
    const result = answer.body.result as { capabilities?: Record<string, unknown>; serverInfo?: { name?: string } };
    expect(result.serverInfo?.name).toBe("mcp-task-gateway/pair");
    expect(result.capabilities?.tools).toBeDefined();
    // The modern member announces its list changes, so the endpoint relays them (federation-list-changed.test.ts).
    for (const kind of ["tools", "prompts", "resources"])
      expect((result.capabilities?.[kind] as Record<string, unknown> | undefined)?.listChanged).toBe(true);
  });

  it("a task made through the endpoint is served there and on its upstream's route, and unknown elsewhere", async () => {
    const created = await callTool(fed("pair"), "one__slow_task", { durationMs: 50, steps: 1 });
    const id = created.body.result?.taskId;
    expect(typeof id === "string" && id.startsWith("one."), created.text).toBe(true);
    const taskId = id as string;
    const onFed = await modernRpc(fed("pair"), "tasks/get", { taskId }, { name: taskId });
    expect(onFed.body.result, onFed.text).toMatchObject({ taskId });
    const onRoute = await modernRpc(`${gateway.url}/one`, "tasks/get", { taskId }, { name: taskId });
    expect(onRoute.body.result, onRoute.text).toMatchObject({ taskId });
    await expectUnknownTaskOn(`${gateway.url}/two`, taskId);
  });

  it("does not hold a client that left mid-call against the member: its breaker stays closed", async () => {
    for (let i = 0; i < 4; i++) {
      const leaving = new AbortController();
      const call = callTool(
        fed("pair"),
        "one__slow_task",
        { durationMs: 2_000, steps: 4 },
        { caps: {}, signal: leaving.signal },
      );
      setTimeout(() => leaving.abort(), 150);
      await expect(call).rejects.toThrow();
    }
    const after = await callTool(fed("pair"), "one__echo", { text: "still served" });
    expect(after.status, after.text).toBe(200);
    expect(after.body.result, after.text).toBeDefined();
  });

  it("refuses a legacy request outside a session, other than initialize, with a clear error", async () => {
    const res = await fetch(fed("pair"), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
        params: {},
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { data: { reason: string } } };
    expect(body.error.data.reason).toBe("legacy_not_federated");
  });
});
