// The lean tasks/get path (src/endpoints/task-poll.ts) in front of Hono: a real
// gateway (createGateway) over the SDK demo upstream, served by a Node server
// built the way startGateway builds it, with a spy on the full route so each
// test knows which path answered. A found task is answered by the lean path
// with the same bytes and headers as the full route; everything else is the
// full route's, with the body the lean path already read handed over intact.
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createGateway, type Gateway, type GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { isRecord } from "../helpers/http.js";
import { startTestIdp } from "../helpers/jwks.js";
import { TEST_REDIS_URL, testRedis } from "../helpers/redis.js";

type Json = Record<string, unknown>;
const TASKS = "io.modelcontextprotocol/tasks";
const DECLARING: Json = { extensions: { [TASKS]: {} } };

interface Served {
  gateway: Gateway;
  url: string;
  /** Requests the lean path handed to the full route. */
  handedOn: () => number;
  close: () => Promise<void>;
}

async function serve(upstreamUrl: string, extra: Partial<GatewayConfigInput> = {}): Promise<Served> {
  const gateway = createGateway({
    upstream: { url: upstreamUrl },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks: { rules: [{ tool: "echo", mode: "always" }] },
    ...extra,
  });
  await gateway.ready;
  const hono = getRequestListener(gateway.app.fetch);
  let handed = 0;
  const server: Server = createServer(
    gateway.nodeListener((req, res) => {
      handed += 1;
      void hono(req, res);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    gateway,
    url: `http://127.0.0.1:${port}/mcp`,
    handedOn: () => handed,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.shutdown(0);
    },
  };
}

let nextId = 1;

function body(method: string, params: Json, caps: Json = DECLARING, id: string | number = nextId++): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method,
    params: { ...params, _meta: modernMeta({ capabilities: caps }) },
  });
}

async function post(
  url: string,
  text: string,
  headers: Record<string, string | undefined>,
): Promise<{ status: number; headers: Headers; text: string }> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) clean[k] = v;
  const res = await fetch(url, { method: "POST", headers: clean, body: text });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const getHeaders = (
  taskId: string,
  extra: Record<string, string | undefined> = {},
): Record<string, string | undefined> => ({
  ...modernHeaders("tasks/get", taskId),
  ...extra,
});

async function createTask(url: string, headers: Record<string, string> = {}): Promise<string> {
  const reply = await post(url, body("tools/call", { name: "echo", arguments: { message: "hi" } }), {
    ...modernHeaders("tools/call", "echo"),
    ...headers,
  });
  const message = JSON.parse(reply.text) as Json;
  const result = message.result;
  if (!isRecord(result) || typeof result.taskId !== "string") throw new Error(`no task: ${reply.text}`);
  return result.taskId;
}

let upstream: SdkUpstream;
let gw: Served;
let taskId: string;

beforeAll(async () => {
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  gw = await serve(upstream.url);
  taskId = await createTask(gw.url);
});

afterAll(async () => {
  await gw.close();
  await upstream.close();
});

describe("the lean tasks/get path", () => {
  let before = 0;
  beforeEach(() => {
    before = gw.handedOn();
  });

  it("answers a found task itself, with the full route's status, headers and bytes", async () => {
    const text = body("tasks/get", { taskId }, DECLARING, "same-id");
    const lean = await post(gw.url, text, getHeaders(taskId));
    expect(gw.handedOn()).toBe(before);
    // The same request with a query string is not the lean path's (it matches the path exactly): the full route answers.
    const full = await post(`${gw.url}?via=hono`, text, getHeaders(taskId));
    expect(gw.handedOn()).toBe(before + 1);
    expect(lean.status).toBe(200);
    expect(full.status).toBe(200);
    expect(lean.headers.get("content-type")).toBe(full.headers.get("content-type"));
    expect(lean.headers.get("content-length")).toBe(String(Buffer.byteLength(lean.text)));
    expect(lean.text).toBe(full.text);
    expect(JSON.parse(lean.text)).toMatchObject({ jsonrpc: "2.0", id: "same-id", result: { taskId } });
  });

  it("hands another caller's id to the full route, which answers it like an unknown one", async () => {
    const reply = await post(
      gw.url,
      body("tasks/get", { taskId }),
      getHeaders(taskId, { authorization: "Bearer someone-else" }),
    );
    expect(gw.handedOn()).toBe(before + 1);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text)).toMatchObject({ error: { code: -32602 } });
  });

  it("answers another caller's id exactly as an unknown one, whether the poller sends credentials or none", async () => {
    const bearerTask = await createTask(gw.url, { authorization: "Bearer owner" });
    // An id of the same form that no one has (the random part of a real one, changed).
    const unknown = `${taskId.slice(0, -4)}${taskId.endsWith("AAAA") ? "BBBB" : "AAAA"}`;
    const answer = async (id: string, headers: Record<string, string>): Promise<string> => {
      const reply = await post(gw.url, body("tasks/get", { taskId: id }, DECLARING, "rpc-1"), getHeaders(id, headers));
      expect(reply.status).toBe(200);
      return reply.text.replaceAll(id, "<id>");
    };
    const handed = gw.handedOn();
    // The anonymous caller polls a task of a caller with a token, and a caller with a token the anonymous one's.
    const notTheirs = [await answer(bearerTask, {}), await answer(taskId, { authorization: "Bearer owner" })];
    const unknowns = [await answer(unknown, {}), await answer(unknown, { authorization: "Bearer owner" })];
    expect(gw.handedOn()).toBe(handed + 4);
    expect(JSON.parse(notTheirs[0] ?? "")).toMatchObject({ id: "rpc-1", error: { code: -32602 } });
    expect(notTheirs).toEqual(unknowns);
    // Each owner still reads its own.
    expect(JSON.parse(await answer(bearerTask, { authorization: "Bearer owner" }))).toMatchObject({ result: {} });
    expect(JSON.parse(await answer(taskId, {}))).toMatchObject({ result: {} });
  });

  it("hands validation failures on with the body it read: the full route answers them", async () => {
    // Mcp-Name that does not mirror params.taskId: the header mismatch refusal.
    const mismatch = await post(gw.url, body("tasks/get", { taskId }), getHeaders(taskId, { "mcp-name": "other" }));
    expect(mismatch.status).toBe(400);
    expect(JSON.parse(mismatch.text)).toMatchObject({ error: { code: -32020 } });
    // Not JSON at all: -32700 from the full route (the body it parses is the one the lean path read).
    const garbage = await post(gw.url, "{not json", getHeaders(taskId));
    expect(garbage.status).toBe(400);
    expect(JSON.parse(garbage.text)).toMatchObject({ error: { code: -32700 } });
    // A client that did not declare the extension: the capability refusal.
    const undeclared = await post(gw.url, body("tasks/get", { taskId }, {}), getHeaders(taskId));
    expect(JSON.parse(undeclared.text)).toMatchObject({ error: { code: -32021 } });
    expect(gw.handedOn()).toBe(before + 3);
  });

  it("keeps the limits and the Origin rule of the full route", async () => {
    const large = await post(
      gw.url,
      body("tasks/get", { taskId, pad: "x".repeat(5 * 1024 * 1024) }),
      getHeaders(taskId),
    );
    expect(large.status).toBe(413);
    const foreign = await post(
      gw.url,
      body("tasks/get", { taskId }),
      getHeaders(taskId, { origin: "https://evil.example" }),
    );
    expect(foreign.status).toBe(403);
    expect(gw.handedOn()).toBe(before + 2);
  });

  it("leaves a request without a plain Host header to the full route, which refuses it", async () => {
    const { port } = new URL(gw.url);
    const text = body("tasks/get", { taskId });
    const head = Object.entries(getHeaders(taskId))
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("");
    // HTTP/1.0 may omit Host (Node accepts it); @hono/node-server answers 400 for it.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () =>
        socket.end(`POST /mcp HTTP/1.0\r\n${head}content-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`),
      );
      let got = "";
      socket.on("data", (d: Buffer) => (got += d.toString()));
      socket.on("end", () => resolve(got));
      socket.on("error", reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.[01] 400/);
    expect(gw.handedOn()).toBe(before + 1);
  });

  it("counts what it answers in the request metrics", async () => {
    const metered = await serve(upstream.url, { metrics: { enabled: true } });
    try {
      const id = await createTask(metered.url);
      const handed = metered.handedOn();
      for (let i = 0; i < 3; i++)
        expect((await post(metered.url, body("tasks/get", { taskId: id }), getHeaders(id))).status).toBe(200);
      expect(metered.handedOn()).toBe(handed);
      const page = await (await fetch(metered.url.replace(/\/mcp$/, "/metrics"))).text();
      const line = page
        .split("\n")
        .find(
          (l) =>
            l.startsWith("mcp_gateway_requests_total{") && l.includes('method="tasks"') && l.includes('era="modern"'),
        );
      expect(line).toBeDefined();
      expect(Number(line?.split(" ").at(-1))).toBe(3);
    } finally {
      await metered.close();
    }
  });

  it("is off with the access log on: every poll goes through the full route, which logs it", async () => {
    const logged = await serve(upstream.url, { log: { level: "silent", access: true } });
    try {
      const id = await createTask(logged.url);
      const handed = logged.handedOn();
      expect((await post(logged.url, body("tasks/get", { taskId: id }), getHeaders(id))).status).toBe(200);
      expect(logged.handedOn()).toBe(handed + 1);
    } finally {
      await logged.close();
    }
  });

  it("with auth.jwt, answers a verified caller's poll and hands a bad token to the full route's 401", async () => {
    const resource = "https://gateway.test/mcp";
    const idp = await startTestIdp({ audience: resource });
    const authed = await serve(upstream.url, {
      auth: { jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: resource } },
    });
    try {
      const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
      const id = await createTask(authed.url, bearer(await idp.token("alice")));
      const handed = authed.handedOn();
      // A refreshed token for the same subject: answered on the lean path, the task still alice's.
      const polled = await post(
        authed.url,
        body("tasks/get", { taskId: id }),
        getHeaders(id, bearer(await idp.token("alice", { ttlSec: 600 }))),
      );
      expect(JSON.parse(polled.text)).toMatchObject({ result: { taskId: id } });
      expect(authed.handedOn()).toBe(handed);
      // Bob's valid token: his own identity, so the id is unknown to him (full route, -32602).
      const bob = await post(
        authed.url,
        body("tasks/get", { taskId: id }),
        getHeaders(id, bearer(await idp.token("bob"))),
      );
      expect(JSON.parse(bob.text)).toMatchObject({ error: { code: -32602 } });
      // A bad token is refused from the headers, before its body is read: the 401 comes while the body never does.
      const { port } = new URL(authed.url);
      const early = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1", () =>
          socket.write(
            `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(getHeaders(id, bearer("not.a.token")))
              .map(([k, v]) => `${k}: ${v}\r\n`)
              .join("")}content-length: 200\r\n\r\n`,
          ),
        );
        socket.on("data", (d: Buffer) => {
          resolve(d.toString());
          socket.destroy();
        });
        socket.on("error", reject);
      });
      expect(early).toMatch(/^HTTP\/1\.1 401/);
      // A token that does not verify: the full route's challenge.
      const forged = await post(authed.url, body("tasks/get", { taskId: id }), getHeaders(id, bearer("not.a.token")));
      expect(forged.status).toBe(401);
      expect(forged.headers.get("www-authenticate")).toMatch(/^Bearer /);
      expect(authed.handedOn()).toBe(handed + 3);
    } finally {
      await authed.close();
      await idp.close();
    }
  });
});

describe("the lean tasks/get path on a Redis store", () => {
  it("answers a found task itself with the bytes Redis holds, the full route's answer byte for byte", async () => {
    const redis = await testRedis();
    const shared = await serve(upstream.url, {
      tasks: { store: TEST_REDIS_URL, storePrefix: redis.freshPrefix(), rules: [{ tool: "echo", mode: "always" }] },
    });
    try {
      // Multi-byte text: the stored JSON goes out as Redis sent it, never decoded and encoded again.
      const reply = await post(shared.url, body("tools/call", { name: "echo", arguments: { text: "héllo 🚀" } }), {
        ...modernHeaders("tools/call", "echo"),
      });
      const id = ((JSON.parse(reply.text) as Json).result as Json).taskId as string;
      const poll = (url: string) => post(url, body("tasks/get", { taskId: id }, DECLARING, "same-id"), getHeaders(id));
      let lean = await poll(shared.url);
      for (let i = 0; i < 100 && !lean.text.includes('"completed"'); i++) lean = await poll(shared.url);
      expect(JSON.parse(lean.text)).toMatchObject({ id: "same-id", result: { taskId: id, status: "completed" } });
      expect(lean.text).toContain("héllo 🚀");
      const handed = shared.handedOn();
      lean = await poll(shared.url);
      expect(shared.handedOn()).toBe(handed);
      const full = await poll(`${shared.url}?via=hono`);
      expect(shared.handedOn()).toBe(handed + 1);
      expect(lean.headers.get("content-type")).toBe(full.headers.get("content-type"));
      expect(lean.headers.get("content-length")).toBe(String(Buffer.byteLength(lean.text)));
      expect(lean.text).toBe(full.text);
      // Another caller's id: the full route's, answered as unknown.
      const foreign = await post(
        shared.url,
        body("tasks/get", { taskId: id }),
        getHeaders(id, { authorization: "Bearer someone-else" }),
      );
      expect(shared.handedOn()).toBe(handed + 2);
      expect(JSON.parse(foreign.text)).toMatchObject({ error: { code: -32602 } });
    } finally {
      await shared.close();
      await redis.cleanup();
    }
  });
});
