// upstream.http2 and upstream.caFile against real TLS upstreams (test/fixtures/tls-upstream.ts, a
// throwaway self-signed certificate made with openssl): calls go over h2, many held calls share one
// connection, pass-through and tasks work on it, an untrusted certificate is refused with the
// gateway's upstream error, and an HTTP/1.1-only TLS upstream still works (one connection per held call).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayConfigInput } from "../../src/index.js";
import {
  makeTestCertificate,
  startTlsUpstream,
  type TestCertificate,
  type TlsUpstream,
} from "../fixtures/tls-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT, parseJsonOrSse } from "../helpers/http.js";
import { callTool, settledTask } from "../helpers/modern-rpc.js";
import { pollUntil } from "../helpers/poll.js";

type Json = Record<string, unknown>;

const HELD = 40;

function gatewayConfig(upstreamUrl: string, upstream: Json): GatewayConfigInput {
  return {
    upstream: { url: upstreamUrl, era: "legacy", ...upstream },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks: {
      rules: [
        { tool: "hold", mode: "always" },
        { tool: "echo", mode: "never" },
      ],
    },
  };
}

/** A legacy client through the pass-through: initialize, then one echo call on its session. */
async function passThroughEcho(gatewayUrl: string, text: string): Promise<{ status: number; message: Json }> {
  const headers = { "content-type": "application/json", accept: MCP_ACCEPT };
  const init = await fetch(gatewayUrl, { method: "POST", headers, body: JSON.stringify(INIT_REQUEST) });
  const initText = await init.text();
  const session = init.headers.get("mcp-session-id");
  if (init.status !== 200 || session === null)
    return { status: init.status, message: parseJsonOrSse(initText) as Json };
  const call = await fetch(gatewayUrl, {
    method: "POST",
    headers: { ...headers, "mcp-session-id": session, "mcp-protocol-version": INIT_REQUEST.params.protocolVersion },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "echo", arguments: { text } },
    }),
  });
  return { status: call.status, message: parseJsonOrSse(await call.text()) as Json };
}

const textOf = (result: unknown): unknown =>
  ((result as { content?: { text?: unknown }[] } | undefined)?.content ?? [])[0]?.text;

/** Starts `count` working tasks of the held tool; returns their ids. */
async function holdTasks(gatewayUrl: string, count: number, prefix: string): Promise<string[]> {
  const answers = await Promise.all(
    Array.from({ length: count }, (_, i) => callTool(gatewayUrl, "hold", { text: `${prefix}-${i}` })),
  );
  return answers.map((a) => {
    const task = a.body.result;
    if (a.status !== 200 || task?.resultType !== "task" || typeof task.taskId !== "string")
      throw new Error(`no task handle: ${a.text}`);
    return task.taskId;
  });
}

let cert: TestCertificate;
beforeAll(() => {
  cert = makeTestCertificate();
});
afterAll(() => cert.dispose());

describe("upstream.http2 with an h2 upstream (Node http2 secure server, HTTP/1.1 allowed)", () => {
  let upstream: TlsUpstream;
  let gateway: TestGateway;

  beforeAll(async () => {
    upstream = await startTlsUpstream({ http2: true, cert });
    gateway = await startGateway(gatewayConfig(upstream.url, { http2: true, caFile: cert.certFile }));
  });
  afterAll(async () => {
    await gateway.close(0);
    await upstream.close();
  });

  it("passes a legacy client's requests through over h2", async () => {
    const { status, message } = await passThroughEcho(gateway.url, "over h2");
    expect(status).toBe(200);
    expect(textOf(message.result)).toBe("over h2");
    expect(upstream.versions.length).toBeGreaterThanOrEqual(2);
    expect(new Set(upstream.versions)).toEqual(new Set(["2.0"]));
  });

  it("answers a plain bridged call (modern client) over h2", async () => {
    const answer = await callTool(gateway.url, "echo", { text: "bridged" });
    expect(answer.status).toBe(200);
    expect(textOf(answer.body.result)).toBe("bridged");
    expect(new Set(upstream.versions)).toEqual(new Set(["2.0"]));
  });

  it(`carries ${HELD} held calls (working tasks) on the one connection already open, and completes them`, async () => {
    // The connection of the tests above is up (h2 negotiated): everything from here shares it.
    const sessionsBefore = upstream.sessions();
    const connectionsBefore = upstream.connections();
    expect(sessionsBefore).toBeGreaterThanOrEqual(1);
    const heldBefore = upstream.held();
    const ids = await holdTasks(gateway.url, HELD, "h2");
    await pollUntil(
      async () => upstream.held(),
      (n) => n === heldBefore + HELD,
    );
    expect(upstream.sessions()).toBe(sessionsBefore);
    expect(upstream.connections()).toBe(connectionsBefore);

    // A task is polled with tasks/get while its call is held, then completes once the upstream answers.
    const working = await callTool(gateway.url, "echo", { text: "still served" });
    expect(textOf(working.body.result)).toBe("still served");
    expect(upstream.release()).toBe(heldBefore + HELD);
    const first = ids[0] as string;
    const task = await settledTask(gateway.url, first);
    expect(task.status).toBe("completed");
    expect(textOf(task.result)).toBe("h2-0");
    const last = await settledTask(gateway.url, ids[HELD - 1] as string);
    expect(textOf(last.result)).toBe(`h2-${HELD - 1}`);
    expect(upstream.sessions()).toBe(sessionsBefore);
  });

  it("refuses an upstream whose certificate it does not trust, with the upstream error", async () => {
    const untrusting = await startGateway(gatewayConfig(upstream.url, { http2: true }));
    try {
      const { status, message } = await passThroughEcho(untrusting.url, "never");
      expect(status).toBe(502);
      const error = message.error as { message: string; data: Json };
      expect(error.data.reason).toBe("upstream_error");
      expect(error.data.cause).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
      expect(error.message).toContain("Upstream MCP server default");
      expect(error.message).not.toContain(new URL(upstream.url).host);
      expect(error.message).toContain("DEPTH_ZERO_SELF_SIGNED_CERT");
    } finally {
      await untrusting.close(0);
    }
  });
});

describe("upstream.caFile without upstream.http2", () => {
  it("trusts the upstream and speaks HTTP/1.1 to it, although it offers h2", async () => {
    const upstream = await startTlsUpstream({ http2: true, cert });
    const gateway = await startGateway(gatewayConfig(upstream.url, { caFile: cert.certFile }));
    try {
      const { status, message } = await passThroughEcho(gateway.url, "h1 by choice");
      expect(status).toBe(200);
      expect(textOf(message.result)).toBe("h1 by choice");
      expect(new Set(upstream.versions)).toEqual(new Set(["1.1"]));
      expect(upstream.sessions()).toBe(0);
    } finally {
      await gateway.close(0);
      await upstream.close();
    }
  });
});

describe("upstream.http2 with an HTTP/1.1-only TLS upstream", () => {
  let upstream: TlsUpstream;
  let gateway: TestGateway;

  beforeAll(async () => {
    upstream = await startTlsUpstream({ http2: false, cert });
    gateway = await startGateway(gatewayConfig(upstream.url, { http2: true, caFile: cert.certFile }));
  });
  afterAll(async () => {
    await gateway.close(0);
    await upstream.close();
  });

  it("falls back to HTTP/1.1 for pass-through and bridged calls", async () => {
    const { status, message } = await passThroughEcho(gateway.url, "fallback");
    expect(status).toBe(200);
    expect(textOf(message.result)).toBe("fallback");
    const answer = await callTool(gateway.url, "echo", { text: "bridged fallback" });
    expect(textOf(answer.body.result)).toBe("bridged fallback");
    expect(new Set(upstream.versions)).toEqual(new Set(["1.1"]));
  });

  it("gives each held call its own connection (no pipelining behind a held call), and completes the tasks", async () => {
    const count = 8;
    const ids = await holdTasks(gateway.url, count, "h1");
    await pollUntil(
      async () => upstream.held(),
      (n) => n === count,
    );
    expect(upstream.openConnections()).toBeGreaterThanOrEqual(count);
    // A short call still gets through while every held one keeps its connection.
    const answer = await callTool(gateway.url, "echo", { text: "not stuck" });
    expect(textOf(answer.body.result)).toBe("not stuck");
    expect(upstream.release()).toBe(count);
    for (const id of [ids[0], ids[count - 1]])
      expect((await settledTask(gateway.url, id as string)).status).toBe("completed");
  });
});
