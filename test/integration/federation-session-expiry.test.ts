// A federated endpoint whose legacy member (the SDK 1.x demo server over HTTP) forgets its sessions, as an
// upstream restart or session expiry would (DemoUpstream.dropSessions: later requests on them get 404 "Session
// not found"): the gateway opens a new upstream session on its own, so the next call through the endpoint
// answers, for an SDK 2.x client and for an SDK 1.x client on a federated session alike, without the client
// initializing again; the client's session keeps serving calls, lists, prompts and input rounds afterwards, all
// on the one new upstream session (a recording proxy in front of the upstream counts them), and the gateway holds
// no more upstream sessions than before (the forgotten one is not kept). A call running when its session is
// forgotten ends with a clear error (upstream_no_answer), not a hang, and the same clients go on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { behindRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { pairConfig } from "../helpers/federated-pair.js";
import { routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { connectModernClient, textOf } from "../helpers/modern-client.js";
import { pollUntil } from "../helpers/poll.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import { connectSdkClient } from "../helpers/sdk-client.js";

let legacy: { url: string; upstream: SdkUpstream; recorder: RecordingProxy; close(): Promise<void> };
let modern: ModernUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  // Behind a recording proxy: what the gateway asks of the upstream is seen.
  legacy = await behindRecordingProxy(await startSdkUpstream());
  modern = await startModernUpstream({ legacy: "reject" });
  gateway = await startManyGateway(pairConfig(legacy.url, modern.url));
});

afterAll(async () => {
  await gateway?.close(0);
  await legacy?.close();
  await modern?.close();
});

const fed = (): string => routeOf(gateway, "pair");

/** The upstream sessions the gateway keeps open for its callers (the legacy session pool). */
async function pooledSessions(): Promise<number> {
  const samples = parseExposition(await (await fetch(`${gateway.metricsOrigin}/metrics`)).text());
  return value(samples, "mcp_gateway_legacy_sessions") ?? 0;
}

/**
 * The upstream forgets every session; returns what the gateway asks of it from then on: the requests on a
 * forgotten session (each refused 404) and the sessions it initializes.
 */
async function forget(): Promise<() => { refused: number; initialized: number }> {
  const known = new Set(legacy.recorder.exchanges.map((x) => x.sessionId).filter((id) => id !== undefined));
  const from = legacy.recorder.exchanges.length;
  await legacy.upstream.dropSessions();
  return () => {
    const since = legacy.recorder.exchanges.slice(from);
    const refused = since.filter((x) => x.sessionId !== undefined && known.has(x.sessionId));
    expect(refused.every((x) => x.status === 404)).toBe(true);
    const initialized = since.filter((x) => x.messages.some((m) => (m as { method?: string }).method === "initialize"));
    return { refused: refused.length, initialized: initialized.length };
  };
}

function legacyText(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
}

describe("a federated member that forgets its upstream sessions", () => {
  it("an SDK 2.x client's next call is served on a new upstream session, and everything after it too", async () => {
    const h = await connectModernClient(fed());
    try {
      expect(textOf(await h.client.callTool({ name: "one__echo", arguments: { text: "before" } }))).toBe("before");
      const before = await pooledSessions();
      expect(before).toBeGreaterThanOrEqual(1);

      const seen = await forget();

      expect(textOf(await h.client.callTool({ name: "one__echo", arguments: { text: "after" } }))).toBe("after");
      // One request on the forgotten session was refused, and one new session opened for it.
      expect(seen()).toEqual({ refused: 1, initialized: 1 });
      const names = (await h.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["one__echo", "one__ask_user", "two__echo"]));
      // An input round (MRTR over the era bridge) runs on the new session.
      const asked = await h.client.callTool({ name: "one__ask_user", arguments: {} });
      expect(textOf(asked)).toBe('action: accept; content: {"name":"Ada"}');
      expect(textOf(await h.client.callTool({ name: "two__echo", arguments: { text: "other" } }))).toBe("other");
      // Everything after it ran on that new session; the forgotten one is not kept.
      expect(seen()).toEqual({ refused: 1, initialized: 1 });
      expect(await pooledSessions()).toBe(before);
    } finally {
      await h.close();
    }
  });

  it("an SDK 1.x client keeps its federated session: no new initialize, and calls, lists and input rounds go on", async () => {
    const h = await connectSdkClient(fed(), { onElicit: () => ({ action: "accept", content: { name: "Grace" } }) });
    try {
      const sessionId = h.sessionId();
      expect(sessionId).toBeDefined();
      expect(legacyText(await h.client.callTool({ name: "one__echo", arguments: { text: "before" } }))).toBe("before");
      const before = await pooledSessions();

      const seen = await forget();

      expect(legacyText(await h.client.callTool({ name: "one__echo", arguments: { text: "after" } }))).toBe("after");
      expect(seen()).toEqual({ refused: 1, initialized: 1 });
      const names = (await h.client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["one__echo", "one__ask_user", "two__echo"]));
      const greet = await h.client.getPrompt({ name: "one__greet", arguments: { name: "Ada" } });
      expect(JSON.stringify(greet.messages)).toContain("Ada");
      const asked = await h.client.callTool({ name: "one__ask_user", arguments: { question: "Name?" } });
      expect(legacyText(asked)).toContain("Grace");
      expect(h.events.some((e) => e.kind === "request" && e.method === "elicitation/create")).toBe(true);
      expect(legacyText(await h.client.callTool({ name: "two__echo", arguments: { text: "other" } }))).toBe("other");

      // The same session throughout, initialized once.
      expect(h.sessionId()).toBe(sessionId);
      const initializes = h.http.filter(
        (x) => x.method === "POST" && (x.requestBody ?? "").includes(`"method":"initialize"`),
      );
      expect(initializes).toHaveLength(1);
      expect(seen()).toEqual({ refused: 1, initialized: 1 });
      expect(await pooledSessions()).toBe(before);
    } finally {
      await h.close();
    }
  });

  it("a second expiry is handled as the first: the session re-opened is not a one-off", async () => {
    const h = await connectModernClient(fed());
    try {
      for (const round of [1, 2, 3]) {
        const seen = await forget();
        const text = `round ${round}`;
        expect(textOf(await h.client.callTool({ name: "one__echo", arguments: { text } }))).toBe(text);
        expect(seen()).toEqual({ refused: 1, initialized: 1 });
      }
    } finally {
      await h.close();
    }
  });

  it("a call in flight when its session is forgotten ends with a clear error; the same clients' next calls are served", async () => {
    const modernClient = await connectModernClient(fed());
    const legacyClient = await connectSdkClient(fed());
    try {
      let progressed = 0;
      const onprogress = (): void => void progressed++;
      const failed = (err: unknown) => err as { code?: unknown; data?: { reason?: unknown } };
      const slow = { name: "one__slow_task", arguments: { durationMs: 60_000, steps: 600 } };
      // Past this the clients give up themselves: a call that hangs fails the test instead of holding it.
      const timeout = 15_000;
      const calls = [
        modernClient.client.callTool(slow, { onprogress, timeout }).then(() => "completed", failed),
        legacyClient.client.callTool(slow, undefined, { onprogress, timeout }).then(() => "completed", failed),
      ];
      // Both calls run upstream (each has had progress).
      await pollUntil(
        async () => progressed,
        (n) => n >= 4,
      );

      const seen = await forget();

      for (const ended of await Promise.all(calls))
        expect(ended, JSON.stringify(ended)).toMatchObject({ code: -32603, data: { reason: "upstream_no_answer" } });
      expect(textOf(await modernClient.client.callTool({ name: "one__echo", arguments: { text: "next" } }))).toBe(
        "next",
      );
      expect(legacyText(await legacyClient.client.callTool({ name: "one__echo", arguments: { text: "next" } }))).toBe(
        "next",
      );
      expect(seen().initialized).toBe(1);
    } finally {
      await Promise.all([modernClient.close(), legacyClient.close()]);
    }
  });
});
