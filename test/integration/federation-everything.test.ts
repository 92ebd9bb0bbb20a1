// A federated endpoint over real peers: @modelcontextprotocol/server-everything over stdio (`upstreams.<name>.command`)
// and the SDK 1.x demo server over HTTP, driven by the SDK 2.x client (stateless, 2026-07-28) and by the SDK 1.x
// client (a legacy session the gateway holds) on the same endpoint. Lists carry both members' tools and prompts,
// prefixed; prompts, resources, progress, sampling and elicitation answer as the member's own route does; a task
// rule of the member makes a task through the endpoint that completes and is read there with tasks/get.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Progress as ModernProgress, Resource } from "@modelcontextprotocol/client";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import {
  DEFAULT_MODERN_ELICIT_RESULT,
  DEFAULT_MODERN_SAMPLE_RESULT,
  connectModernClient,
  textOf,
  type ModernClientHandle,
} from "../helpers/modern-client.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import { everythingCommand } from "../helpers/stdio-servers.js";

const STATIC_DOC = "demo://resource/static/document/architecture.md";
const LONG = "trigger-long-running-operation";

let demo: SdkUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  demo = await startSdkUpstream();
  gateway = await startManyGateway({
    upstreams: {
      everything: { command: everythingCommand() },
      demo: { url: demo.url },
      // A second server-everything whose slow tool is always a task, so the progress test's calls stay plain calls.
      worker: { command: everythingCommand() },
    },
    federated: { mix: { upstreams: ["everything", "demo"] }, jobs: { upstreams: ["worker", "demo"] } },
    tasks: { rules: [{ upstream: "worker", tool: LONG, mode: "always" }] },
    federation: { listTimeoutMs: 10_000 },
  });
});

afterAll(async () => {
  await gateway?.close(0);
  await demo?.close();
});

const fed = (name = "mix"): string => routeOf(gateway, name);

/** Runs `body` with a 2.x client on each URL, closing them afterwards. */
async function withModern<T>(urls: string[], body: (clients: ModernClientHandle[]) => Promise<T>): Promise<T> {
  const clients = await Promise.all(urls.map((url) => connectModernClient(url)));
  try {
    return await body(clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

/** Runs `body` with a 1.x client (a session) on each URL, closing them afterwards. */
async function withLegacy<T>(urls: string[], body: (clients: SdkClientHandle[]) => Promise<T>): Promise<T> {
  const clients = await Promise.all(
    urls.map((url) =>
      connectSdkClient(url, {
        onElicit: () => DEFAULT_MODERN_ELICIT_RESULT,
        onSample: () => DEFAULT_MODERN_SAMPLE_RESULT,
      }),
    ),
  );
  try {
    return await body(clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

function legacyText(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
}

/** Every resource of a listing, page after page. */
async function allResources(list: (cursor?: string) => Promise<{ resources: Resource[]; nextCursor?: string }>) {
  const out: Resource[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const answer = await list(cursor);
    out.push(...answer.resources);
    cursor = answer.nextCursor;
    if (!cursor) return out;
  }
  throw new Error("more than 100 pages");
}

describe("a federated endpoint over server-everything (stdio) and the SDK 1.x demo server", () => {
  it("lists both members' tools and prompts, prefixed, to the 2.x and the 1.x client; prompts/get answers as the member route", async () => {
    await withModern([fed(), routeOf(gateway, "everything"), routeOf(gateway, "demo")], async ([m, ev, dm]) => {
      const ownTools = [
        ...(await ev!.client.listTools()).tools.map((t) => `everything__${t.name}`),
        ...(await dm!.client.listTools()).tools.map((t) => `demo__${t.name}`),
      ].sort();
      const ownPrompts = [
        ...(await ev!.client.listPrompts()).prompts.map((p) => `everything__${p.name}`),
        ...(await dm!.client.listPrompts()).prompts.map((p) => `demo__${p.name}`),
      ].sort();
      expect(ownTools).toEqual(expect.arrayContaining([`everything__${LONG}`, "everything__echo", "demo__echo"]));
      expect(ownPrompts).toEqual(expect.arrayContaining(["everything__simple-prompt", "demo__greet"]));

      const modernTools = (await m!.client.listTools()).tools.map((t) => t.name).sort();
      const modernPrompts = (await m!.client.listPrompts()).prompts.map((p) => p.name).sort();
      expect(modernTools).toEqual(ownTools);
      expect(modernPrompts).toEqual(ownPrompts);

      const args = { department: "Engineering", name: "Alice" };
      const viaFed = await m!.client.getPrompt({ name: "everything__completable-prompt", arguments: args });
      const viaRoute = await ev!.client.getPrompt({ name: "completable-prompt", arguments: args });
      expect(viaFed.messages).toEqual(viaRoute.messages);
      const greet = await m!.client.getPrompt({ name: "demo__greet", arguments: { name: "Ada" } });
      expect(greet.messages).toEqual(
        (await dm!.client.getPrompt({ name: "greet", arguments: { name: "Ada" } })).messages,
      );

      await withLegacy([fed()], async ([l]) => {
        expect(l!.sessionId()).toBeDefined();
        expect((await l!.client.listTools()).tools.map((t) => t.name).sort()).toEqual(ownTools);
        expect((await l!.client.listPrompts()).prompts.map((p) => p.name).sort()).toEqual(ownPrompts);
        const legacyGot = await l!.client.getPrompt({ name: "everything__completable-prompt", arguments: args });
        expect(legacyGot.messages).toEqual(viaRoute.messages);
      });
    });
  });

  it("resources/list and resources/read of a server-everything resource equal the member route's", async () => {
    await withModern([fed(), routeOf(gateway, "everything")], async ([m, ev]) => {
      const own = await allResources((cursor) => ev!.client.listResources(cursor ? { cursor } : undefined));
      expect(own.map((r) => r.uri)).toContain(STATIC_DOC);
      const viaFed = await allResources((cursor) => m!.client.listResources(cursor ? { cursor } : undefined));
      expect(viaFed).toEqual(expect.arrayContaining(own));
      const read = await m!.client.readResource({ uri: STATIC_DOC });
      const direct = await ev!.client.readResource({ uri: STATIC_DOC });
      expect(read.contents).toEqual(direct.contents);
      expect(read.contents[0]).toMatchObject({ uri: STATIC_DOC });

      await withLegacy([fed()], async ([l]) => {
        const legacyList: Resource[] = [];
        let cursor: string | undefined;
        do {
          const page = await l!.client.listResources(cursor ? { cursor } : undefined);
          legacyList.push(...(page.resources as Resource[]));
          cursor = page.nextCursor;
        } while (cursor);
        expect(legacyList).toEqual(expect.arrayContaining(own));
        expect((await l!.client.readResource({ uri: STATIC_DOC })).contents).toEqual(direct.contents);
      });
    });
  });

  it("progress of server-everything's long-running operation reaches onprogress of the 2.x and the 1.x client", async () => {
    const args = { duration: 0.3, steps: 3 };
    const done = "Long running operation completed. Duration: 0.3 seconds, Steps: 3.";
    await withModern([fed()], async ([m]) => {
      const seen: ModernProgress[] = [];
      // The 2.x client also reports its own MRTR rounds as progress (with a message and no total): server-everything
      // may ask for roots/list while the call runs, and the era bridge relays that as an input round of this call.
      const res = await m!.client.callTool(
        { name: `everything__${LONG}`, arguments: args },
        { onprogress: (p) => (p.total === undefined ? undefined : seen.push(p)) },
      );
      expect(textOf(res)).toBe(done);
      // server-everything sends its last progress without waiting for it: the steps in order, at least the first two.
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(seen).toEqual(
        [
          { progress: 1, total: 3 },
          { progress: 2, total: 3 },
          { progress: 3, total: 3 },
        ].slice(0, seen.length),
      );
    });
    await withLegacy([fed()], async ([l]) => {
      const seen: number[] = [];
      const res = await l!.client.callTool({ name: `everything__${LONG}`, arguments: args }, undefined, {
        onprogress: (p) => seen.push(p.progress),
      });
      expect(legacyText(res)).toBe(done);
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(seen).toEqual([1, 2, 3].slice(0, seen.length));
    });
  });

  it("sampling and elicitation of server-everything reach the 2.x client (and the 1.x client's session), and the answers complete the calls", async () => {
    await withModern([fed(), routeOf(gateway, "everything")], async ([m, ev]) => {
      const before = m!.events.length;
      const elicited = await m!.client.callTool({ name: "everything__trigger-elicitation-request", arguments: {} });
      const samplingArgs = { prompt: "Capital of France?", maxTokens: 20 };
      const sampled = await m!.client.callTool({
        name: "everything__trigger-sampling-request",
        arguments: samplingArgs,
      });
      const asked = m!.events.slice(before).filter((e) => e.kind === "request");
      expect(asked.map((e) => e.method)).toEqual(["elicitation/create", "sampling/createMessage"]);
      expect(asked[0]?.params).toMatchObject({ message: "Please provide inputs for the following fields:" });
      expect(asked[1]?.params).toMatchObject({ systemPrompt: "You are a helpful test server.", maxTokens: 20 });
      expect(textOf(elicited)).toContain("- Name: Ada");
      expect(textOf(sampled)).toContain('"text": "Paris"');
      // As the member route answers the same client.
      const routeElicited = await ev!.client.callTool({ name: "trigger-elicitation-request", arguments: {} });
      const routeSampled = await ev!.client.callTool({ name: "trigger-sampling-request", arguments: samplingArgs });
      expect(elicited.content).toEqual(routeElicited.content);
      expect(sampled.content).toEqual(routeSampled.content);

      // The 1.x client on the same endpoint gets them as server-to-client requests on its session.
      await withLegacy([fed()], async ([l]) => {
        const legacyElicited = await l!.client.callTool({
          name: "everything__trigger-elicitation-request",
          arguments: {},
        });
        const legacySampled = await l!.client.callTool({
          name: "everything__trigger-sampling-request",
          arguments: samplingArgs,
        });
        expect(l!.events.filter((e) => e.kind === "request").map((e) => e.method)).toEqual([
          "elicitation/create",
          "sampling/createMessage",
        ]);
        expect(legacySampled.content).toEqual(routeSampled.content);
        expect(legacyElicited.content).toEqual(routeElicited.content);
      });
    });
  });

  it("a task made through the endpoint by the member's task rule completes and is read with tasks/get there", async () => {
    const created = await callTool(fed("jobs"), `worker__${LONG}`, { duration: 0.2, steps: 2 });
    const taskId = created.body.result?.["taskId"];
    expect(typeof taskId === "string" && taskId.startsWith("worker."), created.text).toBe(true);
    const task = await settledTask(fed("jobs"), taskId as string);
    expect(task, JSON.stringify(task)).toMatchObject({ taskId, status: "completed" });
    const got = await modernRpc(fed("jobs"), "tasks/get", { taskId }, { name: taskId as string });
    expect(got.body.result, got.text).toMatchObject({ taskId, status: "completed" });
    expect(JSON.stringify(got.body.result)).toContain("Long running operation completed");
  });
});
