// Many upstreams behind one gateway: each entry of `upstreams` is served at <server.path>/<name>, the single
// `upstream` keeps <server.path>. One gateway fronts three real servers of three kinds (the SDK 1.x demo
// upstream over HTTP, server-everything over stdio, the SDK 2.x modern-only server over HTTP) and a fourth as
// the single upstream; on each route, what the official SDK clients see through the gateway equals what they
// see directly. A path under server.path that names no upstream is 404 with a JSON-RPC error, and nothing
// reaches any upstream.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODERN_SERVER_INFO, startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { directVsGateway } from "../helpers/compare.js";
import { behindRecordingProxy } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT } from "../helpers/http.js";
import { expectNoRoute, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { connectModernClient, textOf, type ModernClientHandle } from "../helpers/modern-client.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { startLegacyPagedUpstream, TOOL_PAGES, type PagedUpstream } from "../helpers/paged-upstreams.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import { childPids, connectDirectStdio, everythingCommand } from "../helpers/stdio-servers.js";

type Recorded<U extends { url: string; close(): Promise<unknown> }> = Awaited<
  ReturnType<typeof behindRecordingProxy<U>>
>;

let single: PagedUpstream;
let sdk: Recorded<SdkUpstream>;
let modern: Recorded<ModernUpstream>;
let gateway: TestGateway;

beforeAll(async () => {
  single = await startLegacyPagedUpstream();
  sdk = await behindRecordingProxy(await startSdkUpstream());
  modern = await behindRecordingProxy(await startModernUpstream({ legacy: "reject" }));
  gateway = await startManyGateway({
    upstream: { url: single.url },
    upstreams: {
      sdk1: { url: sdk.url },
      everything: { command: everythingCommand() },
      modern: { url: modern.url },
    },
  });
});

afterAll(async () => {
  await gateway?.close(0);
  await Promise.allSettled([single?.close(), sdk?.close(), modern?.close()]);
});

describe("each route serves its own upstream, as a direct connection to it does", () => {
  it("/mcp/sdk1 (SDK 1.x server over HTTP): the SDK 1.x client's tools/list and tools/call equal a direct connection's", async () => {
    const { direct, viaGateway } = await directVsGateway(
      { direct: sdk.upstream.url, gateway: routeOf(gateway, "sdk1") },
      async (h) => ({
        tools: await h.client.listTools(),
        echo: await h.client.callTool({ name: "echo", arguments: { text: "through sdk1" } }),
        add: await h.client.callTool({ name: "add", arguments: { a: 2, b: 40 } }),
      }),
    );
    expect(direct).toMatchObject({
      echo: { content: [{ type: "text", text: "through sdk1" }] },
      add: { structuredContent: { sum: 42 } },
    });
    expect(viaGateway).toEqual(direct);
    // It went to the SDK 1.x server, not to another route's.
    expect(
      sdk.recorder
        .posted()
        .some((p) => p.message.method === "tools/call" && JSON.stringify(p.message).includes("sdk1")),
    ).toBe(true);
    expect(single.callsOf("echo")).toEqual([]);
  });

  it("/mcp/everything (server-everything over stdio): the SDK 1.x client's tools/list and tools/call equal a direct stdio connection's", async () => {
    const viaGateway = await connectSdkClient(routeOf(gateway, "everything"));
    const direct = await connectDirectStdio(everythingCommand());
    try {
      const tools = await direct.client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain("get-sum");
      expect(await viaGateway.client.listTools()).toEqual(tools);
      for (const [name, args] of [
        ["echo", { message: "through everything" }],
        ["get-sum", { a: 2, b: 40 }],
      ] as const) {
        const expected = await direct.client.callTool({ name, arguments: args });
        expect(await viaGateway.client.callTool({ name, arguments: args }), name).toEqual(expected);
      }
    } finally {
      await viaGateway.close();
      await direct.close();
    }
  });

  it("/mcp/modern (SDK 2.x modern-only server): the 2.x client's tools/list and tools/call equal a direct connection's", async () => {
    const clients: ModernClientHandle[] = [];
    try {
      const direct = await connectModernClient(modern.upstream.url);
      clients.push(direct);
      const viaGateway = await connectModernClient(routeOf(gateway, "modern"));
      clients.push(viaGateway);
      expect(viaGateway.client.getServerVersion()).toMatchObject(MODERN_SERVER_INFO);
      const tools = await direct.client.listTools(undefined, { cacheMode: "refresh" });
      expect(tools.tools.map((t) => t.name)).toEqual(["echo", "slow", "ask", "sample", "fail"]);
      expect(await viaGateway.client.listTools(undefined, { cacheMode: "refresh" })).toEqual(tools);
      const args = { name: "echo", arguments: { text: "through modern" } };
      const echo = await direct.client.callTool(args);
      expect(textOf(echo)).toBe("through modern");
      expect(await viaGateway.client.callTool(args)).toEqual(echo);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it("/mcp/modern also serves a 2025 client, which the modern-only server itself refuses (the era bridge is per route)", async () => {
    await expect(connectSdkClient(modern.upstream.url)).rejects.toThrow(/2026-07-28/);
    const legacy = await connectSdkClient(routeOf(gateway, "modern"));
    try {
      expect(legacy.client.getServerVersion()).toMatchObject(MODERN_SERVER_INFO);
      const echo = await legacy.client.callTool({ name: "echo", arguments: { text: "bridged" } });
      expect(echo.content).toEqual([{ type: "text", text: "bridged" }]);
    } finally {
      await legacy.close();
    }
  });

  it("/mcp serves the single upstream beside the named ones", async () => {
    const { direct, viaGateway } = await directVsGateway({ direct: single.url, gateway: gateway.url }, async (h) => ({
      tools: await h.client.listTools(),
      echo: await h.client.callTool({ name: "echo", arguments: { text: "through the single route" } }),
    }));
    expect(direct).toMatchObject({
      tools: { tools: TOOL_PAGES[0]?.map((t) => ({ name: t.name })) },
      echo: { content: [{ type: "text", text: "through the single route" }] },
    });
    expect(viaGateway).toEqual(direct);
    // Both calls (direct, then through /mcp) reached the single upstream; none reached the named ones.
    expect(single.callsOf("echo")).toHaveLength(2);
    expect(
      [...sdk.recorder.posted(), ...modern.recorder.posted()].some((p) =>
        JSON.stringify(p.message).includes("through the single route"),
      ),
    ).toBe(false);
  });

  it("a modern client on /mcp and on /mcp/sdk1 sees each route's own tools", async () => {
    const onSingle = await connectModernClient(gateway.url);
    const onSdk1 = await connectModernClient(routeOf(gateway, "sdk1"));
    try {
      const singleTools = (await onSingle.client.listTools(undefined, { cacheMode: "refresh" })).tools.map(
        (t) => t.name,
      );
      const sdk1Tools = (await onSdk1.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
      expect(singleTools).toEqual(TOOL_PAGES.flat().map((t) => t.name));
      expect(sdk1Tools).toEqual(expect.arrayContaining(["echo", "add", "slow_task", "ask_user"]));
      expect(sdk1Tools).not.toContain("secret_admin");
    } finally {
      await onSingle.close();
      await onSdk1.close();
    }
  });
});

describe("a route that names no upstream", () => {
  /** Everything any upstream has been asked so far: HTTP exchanges, and the stdio server's processes. */
  const reached = () => ({
    single: single.received.length,
    sdk: sdk.recorder.exchanges.length,
    modern: modern.recorder.exchanges.length,
    stdioProcesses: new Set(childPids("server-everything")),
  });

  it("/mcp/nope answers 404 with a JSON-RPC error to initialize, a modern tools/call and a GET, and nothing reaches any upstream", async () => {
    const before = reached();
    const nope = routeOf(gateway, "nope");

    const init = await expectNoRoute(nope, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify(INIT_REQUEST),
    });
    expect([INIT_REQUEST.id, null]).toContain(init.id);

    const call = await expectNoRoute(nope, {
      method: "POST",
      headers: modernHeaders("tools/call", "echo"),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "nope-1",
        method: "tools/call",
        params: { name: "echo", arguments: { text: "lost" }, _meta: modernMeta() },
      }),
    });
    expect(["nope-1", null]).toContain(call.id);

    await expectNoRoute(nope, { method: "GET", headers: { accept: "text/event-stream" } });
    // A name of the wrong shape (upper case) and a path below a real route's name are no routes either.
    for (const path of ["SDK1", "sdk1x"]) {
      await expectNoRoute(routeOf(gateway, path), {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT },
        body: JSON.stringify(INIT_REQUEST),
      });
    }

    const after = reached();
    expect({ ...after, stdioProcesses: undefined }).toEqual({ ...before, stdioProcesses: undefined });
    // No server-everything process was started for it (one may have ended meanwhile).
    expect([...after.stdioProcesses].filter((pid) => !before.stdioProcesses.has(pid))).toEqual([]);
    // The real routes still answer.
    const h = await connectSdkClient(routeOf(gateway, "sdk1"));
    try {
      expect((await h.client.callTool({ name: "echo", arguments: { text: "still here" } })).content).toEqual([
        { type: "text", text: "still here" },
      ]);
    } finally {
      await h.close();
    }
  });
});

describe("paths under server.path that serve nothing", () => {
  it("without a single upstream, /mcp itself is 404 with a JSON-RPC error, as any unknown route", async () => {
    const gw = await startManyGateway({ upstreams: { only: { url: sdk.url } } });
    try {
      const before = sdk.recorder.exchanges.length;
      await expectNoRoute(gw.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT },
        body: JSON.stringify(INIT_REQUEST),
      });
      expect(sdk.recorder.exchanges.length).toBe(before);
      const h = await connectSdkClient(routeOf(gw, "only"));
      await h.close();
    } finally {
      await gw.close(0);
    }
  });

  it("a path below a route (/mcp/sdk1/extra, /mcp/sdk1/) is 404 with a JSON-RPC error too, not a plain-text page", async () => {
    const before = sdk.recorder.exchanges.length;
    for (const path of ["sdk1/extra", "sdk1/"]) {
      await expectNoRoute(routeOf(gateway, path), {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT },
        body: JSON.stringify(INIT_REQUEST),
      });
    }
    expect(sdk.recorder.exchanges.length).toBe(before);
  });
});
