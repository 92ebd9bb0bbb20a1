// A legacy client (SDK 1.x, session-based) on a federated endpoint over the SDK 1.x demo server (legacy) and the
// SDK 2.x modern-only server: the gateway holds the client's session and sends each of its requests to the
// federated endpoint itself as a 2026-07-28 request over loopback, with the client's credentials. The lists
// are the endpoint's (prefixed names), calls answer as the upstreams' own routes do, an elicitation of a legacy
// member reaches the client over its session, and DELETE ends the session.
import { legacyInitialize } from "../helpers/http.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createGateway } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { behindRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import { manyConfig, startManyGateway } from "../helpers/many-upstreams.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import type { TestGateway } from "../helpers/gateway.js";

let legacy: SdkUpstream;
let modern: { url: string; upstream: ModernUpstream; recorder: RecordingProxy; close(): Promise<void> };
let gateway: TestGateway;

const CONFIG = () => ({
  upstreams: { one: { url: legacy.url }, two: { url: modern.url, era: "modern" as const } },
  federated: { pair: { upstreams: ["one", "two"] } },
});

beforeAll(async () => {
  legacy = await startSdkUpstream();
  modern = await behindRecordingProxy(await startModernUpstream({ legacy: "reject" }));
  // Bound on every address: the gateway reaches its own listener on 127.0.0.1.
  gateway = await startManyGateway({ ...CONFIG(), server: { host: "0.0.0.0" } });
});

afterAll(async () => {
  await gateway?.close();
  await legacy?.close();
  await modern?.close();
});

const fed = () => `${gateway.url.replace("0.0.0.0", "127.0.0.1")}/pair`;
const route = (name: string) => `${gateway.url.replace("0.0.0.0", "127.0.0.1")}/${name}`;

function textOf(result: unknown): string {
  const content = (result as CallToolResult).content;
  return content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

async function withClients<T>(urls: string[], run: (clients: SdkClientHandle[]) => Promise<T>): Promise<T> {
  const clients = await Promise.all(
    urls.map((url) =>
      connectSdkClient(url, {
        headers: { authorization: "Bearer fed-legacy-token" },
        onElicit: () => ({ action: "accept", content: { name: "Grace" } }),
      }),
    ),
  );
  try {
    return await run(clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

describe("an SDK 1.x client on a federated endpoint", () => {
  it("gets a session of the gateway's and lists the prefixed tools of both members", async () => {
    await withClients([fed()], async ([client]) => {
      expect(client?.sessionId()).toBeDefined();
      const names = (await client!.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("one__echo");
      expect(names).toContain("two__echo");
      expect(names).toContain("one__ask_user");
      expect(names.every((n) => n.startsWith("one__") || n.startsWith("two__"))).toBe(true);
    });
  });

  it("routes a call to each member and answers as that upstream's own route does", async () => {
    await withClients([fed(), route("one"), route("two")], async ([client, one, two]) => {
      await client!.client.listTools();
      const viaFed = await client!.client.callTool({ name: "two__echo", arguments: { text: "hi" } });
      const direct = await two!.client.callTool({ name: "echo", arguments: { text: "hi" } });
      expect(textOf(viaFed)).toBe(textOf(direct));
      const legacyFed = await client!.client.callTool({ name: "one__echo", arguments: { text: "hey" } });
      const legacyDirect = await one!.client.callTool({ name: "echo", arguments: { text: "hey" } });
      expect(textOf(legacyFed)).toBe(textOf(legacyDirect));
    });
  });

  it("carries the client's credentials to the member routes, and on to the upstream", async () => {
    await withClients([fed()], async ([client]) => {
      await client!.client.listTools();
      await client!.client.callTool({ name: "two__echo", arguments: { text: "who" } });
      const call = modern.recorder
        .posted()
        .find(
          ({ message }) =>
            message.method === "tools/call" &&
            (message.params as { arguments?: { text?: string } }).arguments?.text === "who",
        );
      expect(call?.exchange.headers.authorization).toBe("Bearer fed-legacy-token");
    });
  });

  it("takes an elicitation of a legacy member to the client over its session; its answer completes the call", async () => {
    await withClients([fed(), route("one")], async ([client, one]) => {
      await client!.client.listTools();
      const viaFed = await client!.client.callTool({ name: "one__ask_user", arguments: { question: "Name?" } });
      expect(client!.events.some((e) => e.kind === "request" && e.method === "elicitation/create")).toBe(true);
      expect(textOf(viaFed)).toContain("Grace");
      const direct = await one!.client.callTool({ name: "ask_user", arguments: { question: "Name?" } });
      expect(textOf(viaFed)).toBe(textOf(direct));
    });
  });

  it("ends the session on DELETE: the session id is unknown afterwards", async () => {
    await withClients([fed()], async ([client]) => {
      const sessionId = client!.sessionId() as string;
      await client!.transport.terminateSession();
      const res = await fetch(fed(), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: "Bearer fed-legacy-token",
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
      });
      expect(res.status).toBe(404);
      await res.body?.cancel();
    });
  });
});

describe("a gateway that does not listen (createGateway alone)", () => {
  it("refuses a legacy client on a federated endpoint with a 400 that says why", async () => {
    const built = createGateway(manyConfig(CONFIG()));
    try {
      const res = await built.fetch(new Request("http://gateway.test/mcp/pair", legacyInitialize()));
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { message: string; data: { reason: string } } };
      expect(body.error.data.reason).toBe("legacy_not_federated");
      expect(body.error.message).toContain("startGateway");
    } finally {
      await built.shutdown(0);
    }
  });
});
