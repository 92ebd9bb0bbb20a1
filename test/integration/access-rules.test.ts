// Tool access rules (config `access`) on every path a client can take:
//   (a) an SDK 1.x client through the legacy pass-through, the upstream
//       answering JSON or SSE;
//   (b) an SDK 2.x client (2026-07-28) through the era bridge to a legacy
//       SDK 1.x upstream;
//   (c) an SDK 2.x client in front of a modern SDK 2.x upstream, JSON or SSE.
// The upstreams' tools/list paginates (three pages, the middle one holding only
// a denied tool), and they record what they receive: a denied tool is absent
// from every page (the cursors still lead on), a call to it is -32602 with
// data.reason "access_denied", and the upstream never hears of it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { ProtocolError } from "@modelcontextprotocol/client";
import {
  startLegacyPagedUpstream,
  startModernPagedUpstream,
  TOOL_PAGES,
  type PagedUpstream,
} from "../helpers/paged-upstreams.js";
import { startScriptedUpstream, type ScriptedUpstream } from "../helpers/scripted-upstream.js";
import { startTestGateway, type TestGateway, type TestGatewayOverrides } from "../helpers/gateway.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import { connectModernClient, resultIn, type ModernClientHandle } from "../helpers/modern-client.js";
import type { HttpExchange } from "../helpers/recording.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { exchangesWithBody, isRecord } from "../helpers/http.js";
import { callTool, settledTask } from "../helpers/modern-rpc.js";

const ACCESS: TestGatewayOverrides["access"] = { default: "allow", rules: [{ tools: "secret_*", effect: "deny" }] };
/** What a caller sees of each upstream page under ACCESS: page 2 comes out empty, its cursor kept. */
const VISIBLE_PAGES = [["echo"], [], ["hold", "boom", "count"]];
const TASKS = "io.modelcontextprotocol/tasks";

/** The rejection of a promise that must fail. */
async function failure(p: Promise<unknown>): Promise<unknown> {
  return await p.then(
    (v) => {
      throw new Error(`expected a failure, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
}

interface Page {
  tools: Array<{ name: string }>;
  nextCursor?: string | undefined;
}

/** Walks tools/list page by page, following nextCursor. */
async function walkPages(list: (cursor: string | undefined) => Promise<Page>): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages.length < 10);
  return pages;
}

const names = (pages: Page[]): string[][] => pages.map((p) => p.tools.map((t) => t.name));

/**
 * The 2.x client walks every page itself when asked without a cursor; the pages
 * it got are read back from its recorded HTTP exchanges.
 */
async function modernListing(
  client: ModernClientHandle,
): Promise<{ pages: Page[]; all: string[]; exchanges: HttpExchange[] }> {
  const before = client.http.length;
  const all = await client.client.listTools(undefined, { cacheMode: "refresh" });
  const exchanges = exchangesWithBody(client.http.slice(before), (b) => isRecord(b) && b.method === "tools/list");
  await Promise.all(exchanges.map((x) => x.responded));
  const pages = exchanges.map((x) => resultIn(x) as unknown as Page);
  return { pages, all: all.tools.map((t) => t.name), exchanges };
}

/** Upstream and gateway for one describe block; closed in afterAll. */
function setup(start: () => Promise<PagedUpstream>, overrides: TestGatewayOverrides = {}) {
  const env: { upstream?: PagedUpstream; gateway?: TestGateway; closers: Array<() => Promise<void>> } = { closers: [] };
  beforeAll(async () => {
    env.upstream = await start();
    env.gateway = await startTestGateway(env.upstream.url, { access: ACCESS, ...overrides });
  });
  afterAll(async () => {
    for (const close of env.closers.splice(0).reverse()) await close();
    await env.gateway?.close(0);
    await env.upstream?.close();
  });
  return {
    upstream: () => env.upstream as PagedUpstream,
    gateway: () => env.gateway as TestGateway,
    onClose: (close: () => Promise<void>) => env.closers.push(close),
  };
}

describe.each([
  { answers: "JSON", json: true, contentType: /^application\/json/ },
  { answers: "SSE", json: false, contentType: /^text\/event-stream/ },
])("(a) SDK 1.x client → legacy pass-through → SDK 1.x upstream answering $answers", ({ json, contentType }) => {
  const env = setup(() => startLegacyPagedUpstream({ json }));
  let client: SdkClientHandle;
  beforeAll(async () => {
    client = await connectSdkClient(env.gateway().url, { headers: { authorization: "Bearer legacy-client" } });
    env.onClose(() => client.close());
  });

  it("every tools/list page lacks the denied tools, and the cursors still reach every allowed one", async () => {
    const pages = await walkPages((cursor) => client.client.listTools(cursor === undefined ? {} : { cursor }));
    expect(names(pages)).toEqual(VISIBLE_PAGES);
    expect(pages.map((p) => p.nextCursor)).toEqual(["page-1", "page-2", undefined]);
    // The pages came from the upstream in its own answer shape, and were filtered in that shape.
    const answers = exchangesWithBody(client.http, (b) => isRecord(b) && b.method === "tools/list");
    expect(answers).toHaveLength(3);
    for (const x of answers) expect(x.contentType).toMatch(contentType);
    expect(env.upstream().received.filter((r) => r.method === "tools/list")).toHaveLength(3);
  });

  it("a call to a denied tool is -32602 access_denied, and the upstream never receives it", async () => {
    for (const tool of ["secret_admin", "secret_wipe"]) {
      const err = await failure(client.client.callTool({ name: tool, arguments: {} }));
      expect(err).toBeInstanceOf(McpError);
      expect(err).toMatchObject({ code: -32602, data: { reason: "access_denied", tool } });
    }
    expect(env.upstream().callsOf("secret_admin")).toEqual([]);
    expect(env.upstream().callsOf("secret_wipe")).toEqual([]);
    // The session is unharmed: an allowed tool still works.
    const echo = await client.client.callTool({ name: "echo", arguments: { text: "still here" } });
    expect(echo.content).toEqual([{ type: "text", text: "still here" }]);
    expect(env.upstream().callsOf("echo")).toHaveLength(1);
  });
});

describe.each([
  { answers: "JSON", json: true },
  { answers: "SSE", json: false },
])("(b) SDK 2.x client → era bridge → SDK 1.x upstream answering $answers", ({ json }) => {
  const env = setup(() => startLegacyPagedUpstream({ json }), { tasks: { rules: [{ tool: "*", mode: "always" }] } });
  let client: ModernClientHandle;
  beforeAll(async () => {
    client = await connectModernClient(env.gateway().url);
    env.onClose(() => client.close());
  });

  it("every tools/list page lacks the denied tools; the aggregated list too", async () => {
    const { pages, all } = await modernListing(client);
    expect(names(pages)).toEqual(VISIBLE_PAGES);
    expect(pages.map((p) => p.nextCursor)).toEqual(["page-1", "page-2", undefined]);
    expect(all).toEqual(VISIBLE_PAGES.flat());
  });

  it("a call to a denied tool is -32602 access_denied, and the upstream never receives it", async () => {
    for (const tool of ["secret_admin", "secret_wipe"]) {
      const err = await failure(client.client.callTool({ name: tool, arguments: {} }));
      expect(err).toBeInstanceOf(ProtocolError);
      expect(err).toMatchObject({ code: -32602, data: { reason: "access_denied", tool } });
    }
    expect(env.upstream().callsOf("secret_admin")).toEqual([]);
    expect(env.upstream().callsOf("secret_wipe")).toEqual([]);
    const echo = await client.client.callTool({ name: "echo", arguments: { text: "bridged" } });
    expect(echo.content).toEqual([{ type: "text", text: "bridged" }]);
  });

  it("a denied call under an always-task rule is refused before any task exists", async () => {
    const res = await fetch(env.gateway().url, {
      method: "POST",
      headers: modernHeaders("tools/call", "secret_admin"),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: {
          name: "secret_admin",
          arguments: {},
          _meta: modernMeta({ capabilities: { extensions: { [TASKS]: {} } } }),
        },
      }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32602, data: { reason: "access_denied", tool: "secret_admin" } },
    });
    expect((await env.gateway().stats()).tasks.stored).toBe(0);
    expect(env.upstream().callsOf("secret_admin")).toEqual([]);
  });
});

describe.each([
  { answers: "JSON", responseMode: "auto" as const, contentType: /^application\/json/ },
  { answers: "SSE", responseMode: "sse" as const, contentType: /^text\/event-stream/ },
])("(c) SDK 2.x client → gateway → SDK 2.x upstream answering $answers", ({ responseMode, contentType }) => {
  const env = setup(() => startModernPagedUpstream({ responseMode }), {
    tasks: { rules: [{ tool: "hold", mode: "always" }] },
  });
  let client: ModernClientHandle;
  beforeAll(async () => {
    client = await connectModernClient(env.gateway().url);
    env.onClose(() => client.close());
  });

  it("every tools/list page lacks the denied tools, in the upstream's own answer shape", async () => {
    const { pages, all, exchanges } = await modernListing(client);
    expect(names(pages)).toEqual(VISIBLE_PAGES);
    expect(pages.map((p) => p.nextCursor)).toEqual(["page-1", "page-2", undefined]);
    expect(all).toEqual(VISIBLE_PAGES.flat());
    for (const x of exchanges) expect(x.contentType).toMatch(contentType);
    // Each page went to the upstream once (nothing served from a cache on the way).
    expect(env.upstream().received.filter((r) => r.method === "tools/list").length).toBeGreaterThanOrEqual(3);
  });

  it("a call to a denied tool is -32602 access_denied, and the upstream never receives it", async () => {
    for (const tool of ["secret_admin", "secret_wipe"]) {
      const err = await failure(client.client.callTool({ name: tool, arguments: {} }));
      expect(err).toBeInstanceOf(ProtocolError);
      expect(err).toMatchObject({ code: -32602, data: { reason: "access_denied", tool } });
    }
    // Raw: HTTP 200 with the JSON-RPC error, as for any unknown tool.
    const res = await fetch(env.gateway().url, {
      method: "POST",
      headers: modernHeaders("tools/call", "secret_wipe"),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "raw",
        method: "tools/call",
        params: { name: "secret_wipe", arguments: {}, _meta: modernMeta() },
      }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      id: "raw",
      error: { code: -32602, data: { reason: "access_denied", tool: "secret_wipe" } },
    });
    expect(env.upstream().callsOf("secret_admin")).toEqual([]);
    expect(env.upstream().callsOf("secret_wipe")).toEqual([]);
    const echo = await client.client.callTool({ name: "echo", arguments: { text: "modern" } });
    expect(echo.content).toEqual([{ type: "text", text: "modern" }]);
    expect(env.upstream().callsOf("echo")).toHaveLength(1);
  });

  it("an allowed tool still runs as a gateway task in front of the modern upstream", async () => {
    const created = await callTool(env.gateway().url, "hold", { key: "c" });
    expect(created.body.result).toMatchObject({ resultType: "task", status: "working" });
    await env.upstream().holding("c");
    env.upstream().release("c");
    const task = await settledTask(env.gateway().url, created.body.result?.taskId as string);
    expect(task).toMatchObject({ status: "completed", result: { content: [{ type: "text", text: "released c" }] } });
  });
});

// Only what a real SDK peer cannot show: an upstream that reads a body whatever its
// content type says (the SDKs refuse anything but application/json with 415). Under
// access rules the gateway checks only what it parsed, so such a body is refused
// (415) and never reaches the upstream: no denied call, no unfiltered tools/list.
describe("a lenient upstream that ignores Content-Type", () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream((_req, res, recorded) => {
      const m = JSON.parse(recorded.body) as { id: number; method: string; params?: { name?: string } };
      const result =
        m.method === "tools/list"
          ? { tools: TOOL_PAGES.flat() }
          : { content: [{ type: "text", text: `ran ${m.params?.name ?? "?"}` }] };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }));
    });
    gateway = await startTestGateway(upstream.url, { access: ACCESS });
  });
  afterAll(async () => {
    await gateway?.close(0);
    await upstream?.close();
  });

  const post = (message: unknown) =>
    fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "text/plain",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify(message),
    });

  it("a text/plain body is refused with 415 under access rules, denied or not, and never reaches the upstream", async () => {
    const calls = [
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "secret_admin", arguments: {} } },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: {} } },
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} },
    ];
    for (const message of calls) {
      const res = await post(message);
      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({ error: { code: -32600, data: { reason: "unsupported_media_type" } } });
    }
    expect(upstream.requests).toEqual([]);
  });
});

// Only what a real SDK peer does not do: answer tools/list on an event stream and then leave that stream
// open. The filtered answer must not wait for an end that never comes.
describe("an upstream that keeps the tools/list event stream open after answering", () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream((_req, res, recorded) => {
      const m = JSON.parse(recorded.body) as { id: number };
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(
        `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { tools: TOOL_PAGES.flat() } })}\n\n`,
      );
      // …and never ends it.
    });
    gateway = await startTestGateway(upstream.url, { access: ACCESS });
  });
  afterAll(async () => {
    await gateway?.close(0);
    await upstream?.close();
  });

  it("answers with the filtered page once the answer's event is complete, and lets go of the upstream stream", async () => {
    const res = await fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
    });
    const text = await res.text();
    const data = text.split("\n").find((l) => l.startsWith("data: "));
    expect((JSON.parse(data!.slice(6)) as { result: Page }).result.tools.map((t) => t.name)).toEqual(
      VISIBLE_PAGES.flat(),
    );
    expect(await upstream.requests[0]!.closed).toEqual({ aborted: true });
  });
});
