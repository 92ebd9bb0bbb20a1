// The federated member list is live: gateway.reload(next) (what SIGHUP and --watch-config call) adds a member
// to an endpoint (its tools are listed and callable at once, prefixed), removes one (gone from the lists, its
// names refused, its own route untouched), adds an upstream and makes it a member in one reload, and adds and
// removes a whole endpoint (its path 404 once removed, its legacy sessions ended). An SDK 2.x client and an SDK
// 1.x client whose federated session was opened before the reloads see each change on their next request.
// Last, the operator's way: the gateway process (src/main.ts --config FILE), the file edited, then SIGHUP.
// Real servers: the SDK 1.x demo server (two of them, legacy) and the SDK 2.x modern-only server, each with echo.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { expectNoRoute, manyConfig, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { connectModernClient, textOf, type ModernClientHandle } from "../helpers/modern-client.js";
import { eventually } from "../helpers/ext-tasks-client.js";
import { callTool, modernRpc } from "../helpers/modern-rpc.js";
import { pollUntil } from "../helpers/poll.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import { Replicas } from "../helpers/replicas.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";

let one: SdkUpstream;
let two: ModernUpstream;
let three: SdkUpstream;
let gateway: TestGateway;
let modern: ModernClientHandle;
let legacy: SdkClientHandle;

type Upstreams = NonNullable<GatewayConfigInput["upstreams"]>;
const upstreams = (...names: Array<"one" | "two" | "three">): Upstreams => {
  const all: Upstreams = {
    one: { url: one.url },
    two: { url: two.url, era: "modern" },
    three: { url: three.url },
  };
  return Object.fromEntries(names.map((n) => [n, all[n]])) as Upstreams;
};

function reload(next: GatewayConfigInput): void {
  const plan = gateway.reload(manyConfig(next));
  // Nothing about the federated endpoints or the upstreams waits for a restart.
  expect(plan.restart).toEqual([]);
}

beforeAll(async () => {
  [one, two, three] = await Promise.all([
    startSdkUpstream(),
    startModernUpstream({ legacy: "reject" }),
    startSdkUpstream(),
  ]);
  gateway = await startManyGateway({ upstreams: upstreams("one", "two"), federated: { fed: { upstreams: ["one"] } } });
  // Both clients connect before any reload, and keep their session through all of them.
  modern = await connectModernClient(fed());
  legacy = await connectSdkClient(fed());
});

afterAll(async () => {
  await Promise.allSettled([modern?.close(), legacy?.close()]);
  await gateway?.close(0);
  await Promise.allSettled([one?.close(), two?.close(), three?.close()]);
});

const fed = (name = "fed"): string => routeOf(gateway, name);

/** The endpoint's tool names, as the 2.x client and the 1.x client's session list them (the same), sorted. */
async function listed(): Promise<string[]> {
  const viaModern = (await modern.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
  const viaLegacy = (await legacy.client.listTools()).tools.map((t) => t.name);
  expect([...viaLegacy].sort()).toEqual([...viaModern].sort());
  return [...viaModern].sort();
}

const members = (names: string[]): string[] => [...new Set(names.map((n) => n.slice(0, n.indexOf("__"))))].sort();

function legacyText(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

/** echo of `member` through the endpoint, from both clients. */
async function echoBoth(member: string, text: string): Promise<void> {
  const name = `${member}__echo`;
  expect(textOf(await modern.client.callTool({ name, arguments: { text } }))).toBe(text);
  expect(legacyText(await legacy.client.callTool({ name, arguments: { text } }))).toBe(text);
}

/** The long-lived streams the gateway holds open to clients (a legacy session's GET stream among them). */
async function eventStreams(): Promise<number> {
  const samples = parseExposition(await (await fetch(`${gateway.metricsOrigin}/metrics`)).text());
  return value(samples, "mcp_gateway_event_streams") ?? 0;
}

/** status.json's view of the endpoint's members. */
async function statusMembers(): Promise<Array<{ name: string; state: string }>> {
  const body = (await (await fetch(`${gateway.metricsOrigin}/status.json`)).json()) as {
    federated?: Array<{ name: string; members: Array<{ name: string; state: string }> }>;
  };
  return body.federated?.find((f) => f.name === "fed")?.members ?? [];
}

describe("reloading a federated endpoint's member list", () => {
  it("serves the members configured at the start", async () => {
    expect(members(await listed())).toEqual(["one"]);
    await echoBoth("one", "at the start");
  });

  it("a member added: listed and callable at once, for both clients on their existing sessions", async () => {
    const sessionId = legacy.sessionId();
    reload({ upstreams: upstreams("one", "two"), federated: { fed: { upstreams: ["one", "two"] } } });
    const names = await listed();
    expect(members(names)).toEqual(["one", "two"]);
    expect(names).toContain("two__echo");
    await echoBoth("two", "added");
    await echoBoth("one", "still there");
    expect(legacy.sessionId()).toBe(sessionId);
    expect(await statusMembers()).toEqual([
      { name: "one", state: "served" },
      { name: "two", state: "served" },
    ]);
  });

  it("a member removed: gone from the lists, its names refused on the endpoint, its own route untouched", async () => {
    reload({ upstreams: upstreams("one", "two"), federated: { fed: { upstreams: ["two"] } } });
    expect(members(await listed())).toEqual(["two"]);
    const refused = await callTool(fed(), "one__echo", { text: "removed" });
    expect(refused.body.result, refused.text).toBeUndefined();
    expect(refused.body.error?.code).toBe(-32602);
    await expect(legacy.client.callTool({ name: "one__echo", arguments: { text: "removed" } })).rejects.toThrow(
      /one__echo/,
    );
    await echoBoth("two", "kept");
    const direct = await callTool(routeOf(gateway, "one"), "echo", { text: "direct" });
    expect(direct.body.result, direct.text).toMatchObject({ content: [{ type: "text", text: "direct" }] });
    expect((await statusMembers()).map((m) => m.name)).toEqual(["two"]);
  });

  it("an upstream added and made a member in one reload is listed and callable at once", async () => {
    reload({ upstreams: upstreams("one", "two", "three"), federated: { fed: { upstreams: ["two", "three"] } } });
    const names = await listed();
    expect(members(names)).toEqual(["three", "two"]);
    expect(names).toContain("three__echo");
    await echoBoth("three", "new upstream");
    // Its input rounds reach the clients too: the new member's era bridge is in place.
    const asked = await legacy.client.callTool({ name: "three__ask_user", arguments: { question: "Name?" } });
    expect(legacyText(asked)).toContain("Ada");
  });

  it("an upstream removed with its membership: the endpoint serves the rest", async () => {
    reload({ upstreams: upstreams("two", "three"), federated: { fed: { upstreams: ["three"] } } });
    expect(members(await listed())).toEqual(["three"]);
    const refused = await callTool(fed(), "two__echo", { text: "gone" });
    expect(refused.body.error?.code, refused.text).toBe(-32602);
    await echoBoth("three", "the rest");
  });

  it("an endpoint added answers at once; removed, its path is unknown and its legacy sessions end", async () => {
    const base = { upstreams: upstreams("two", "three") };
    await expectNoRoute(fed("extra"), { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    reload({ ...base, federated: { fed: { upstreams: ["three"] }, extra: { upstreams: ["two", "three"] } } });
    const answer = await modernRpc(fed("extra"), "tools/list", {});
    const names = ((answer.body.result?.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
    expect(members(names)).toEqual(["three", "two"]);
    const session = await connectSdkClient(fed("extra"));
    try {
      expect(legacyText(await session.client.callTool({ name: "two__echo", arguments: { text: "x" } }))).toBe("x");
      const sessionId = session.sessionId() as string;
      await session.standaloneStream();
      const streams = await eventStreams();

      reload({ ...base, federated: { fed: { upstreams: ["three"] } } });

      // The session's GET stream is ended by the gateway, not left open on a path that no longer exists.
      await eventually(
        async () => ((await eventStreams()) === streams - 1 ? true : undefined),
        "the removed endpoint's session stream to end",
      );

      await expectNoRoute(fed("extra"), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
      });
    } finally {
      await session.close();
    }
    // The other endpoint and its clients were not disturbed.
    await echoBoth("three", "undisturbed");
  });

  it("a task made through the endpoint stays readable there after a reload takes its upstream out, and elsewhere stays unknown", async () => {
    const tasks = { rules: [{ upstream: "three", tool: "slow_task", mode: "always" as const }] };
    reload({ upstreams: upstreams("two", "three"), federated: { fed: { upstreams: ["three"] } }, tasks });
    const created = await callTool(fed(), "three__slow_task", { durationMs: 300, steps: 2 });
    const taskId = created.body.result?.taskId as string;
    expect(typeof taskId, created.text).toBe("string");
    reload({
      upstreams: upstreams("two", "three"),
      federated: { fed: { upstreams: ["two"] }, other: { upstreams: ["two"] } },
      tasks,
    });
    const read = await pollUntil(
      () => modernRpc(fed(), "tasks/get", { taskId }, { name: taskId }),
      (a) => a.body.result?.status === "completed",
      10_000,
    );
    expect(read.body.result, read.text).toMatchObject({ taskId, status: "completed" });
    // An endpoint it was never made through does not know it.
    const elsewhere = await modernRpc(fed("other"), "tasks/get", { taskId }, { name: taskId });
    expect(elsewhere.body.error?.code, elsewhere.text).toBe(-32602);
  });
});

describe("the gateway process, its config file edited, then SIGHUP", () => {
  const processes = new Replicas();
  let dir: string | undefined;
  afterAll(async () => {
    await processes.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("adds and removes a federated member", async () => {
    dir = await mkdtemp(join(tmpdir(), "mtg-fed-reload-"));
    const file = join(dir, "gateway.json");
    const write = (members: string[]) =>
      writeFile(
        file,
        JSON.stringify({
          server: { host: "127.0.0.1", port: 0 },
          log: { level: "warn" },
          upstreams: { one: { url: one.url }, two: { url: two.url, era: "modern" } },
          federated: { fed: { upstreams: members } },
        }),
      );
    await write(["one"]);
    const gw = await processes.spawn("fed", undefined, ["--config", file]);
    const started = await pollUntil(
      async () => /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp) /.exec(gw.stdout())?.[1],
      (url) => url !== undefined || !gw.running(),
      20_000,
    );
    expect(started, `${gw.stdout()}\n${gw.stderr()}`).toBeDefined();
    const endpoint = `${started as string}/fed`;
    const membersListed = async (): Promise<string[]> => {
      const answer = await modernRpc(endpoint, "tools/list", {});
      return members(((answer.body.result?.tools ?? []) as Array<{ name: string }>).map((t) => t.name));
    };
    expect(await membersListed()).toEqual(["one"]);

    await write(["one", "two"]);
    gw.child.kill("SIGHUP");
    expect(await pollUntil(membersListed, (m) => m.length === 2)).toEqual(["one", "two"]);
    const echo = await callTool(endpoint, "two__echo", { text: "after SIGHUP" });
    expect(echo.body.result, echo.text).toMatchObject({ content: [{ type: "text", text: "after SIGHUP" }] });

    await write(["two"]);
    gw.child.kill("SIGHUP");
    expect(await pollUntil(membersListed, (m) => !m.includes("one"))).toEqual(["two"]);
    // Nothing went wrong on the way: no error in its log, and it still runs.
    expect(gw.stderr()).not.toMatch(/"level":"error"|reload failed/);
    expect(gw.running()).toBe(true);
  });
});
