// auth.jwt through a real gateway: a local identity provider (jose keys, a JWKS
// endpoint on port 0) in front of the SDK 1.x demo upstream, seen through a
// recording proxy. A refreshed token keeps its subject's tasks and another
// subject sees none; every MCP route answers 401 with an RFC 6750 challenge
// naming the RFC 9728 metadata; the upstream never sees the token; a JWKS that
// is down gives 503, never a pass; claim-matched rules and the audit trail.
import { request as httpRequest } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayConfigInput } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT } from "../helpers/http.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { modernHeaders, modernMeta, modernRpc, type ModernReply } from "../helpers/modern-http.js";
import { pollUntil } from "../helpers/poll.js";
import { testRedis, TEST_REDIS_URL } from "../helpers/redis.js";
import { taskRef } from "../../src/tasks/task-id.js";

const TASKS = "io.modelcontextprotocol/tasks";
const DECLARING = { extensions: { [TASKS]: {} } };
const RESOURCE = "https://gateway.test/mcp";

let idp: TestIdp;
let upstream: SdkUpstream;
let recorder: RecordingProxy;
const gateways: TestGateway[] = [];
let lines: string[] = [];

beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
  upstream = await startSdkUpstream();
  recorder = await startRecordingProxy(upstream.url);
});

afterAll(async () => {
  await recorder.close();
  await upstream.close();
  await idp.close();
});

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close(0)));
  lines = [];
  await idp.setDown(false);
});

async function gatewayWith(
  extra: Partial<GatewayConfigInput> = {},
  auth: Partial<NonNullable<GatewayConfigInput["auth"]>> = {},
): Promise<TestGateway> {
  const gateway = await startGateway(
    {
      upstream: { url: recorder.url },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "debug" },
      ...extra,
      auth: {
        jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE, jwksCooldownMs: 0 },
        resourceMetadata: { resource: RESOURCE, authorization_servers: [idp.issuer] },
        ...auth,
      },
    },
    { logger: createLogger("debug", (line) => lines.push(line)) },
  );
  gateways.push(gateway);
  return gateway;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const call = (url: string, name: string, args: Record<string, unknown>, token: string): Promise<ModernReply> =>
  modernRpc(url, "tools/call", { name, arguments: args }, { capabilities: DECLARING, headers: bearer(token) });

const taskGet = (url: string, taskId: string, token: string): Promise<ModernReply> =>
  modernRpc(url, "tasks/get", { taskId }, { capabilities: DECLARING, headers: bearer(token) });

describe("auth.jwt: refusals", () => {
  it("every MCP route needs a token: 401 with a bare challenge that names the resource metadata", async () => {
    const gw = await gatewayWith();
    const metadata = `${RESOURCE.replace("/mcp", "")}/.well-known/oauth-protected-resource/mcp`;
    const requests: RequestInit[] = [
      {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT },
        body: JSON.stringify(INIT_REQUEST),
      },
      { method: "GET", headers: { accept: "text/event-stream" } },
      { method: "DELETE", headers: { "mcp-session-id": "x" } },
    ];
    for (const init of requests) {
      const res = await fetch(gw.url, init);
      expect(res.status, init.method).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadata}"`);
      const body = (await res.json()) as { error: { code: number; data: { reason: string } } };
      expect(body.error).toMatchObject({ code: -32600, data: { reason: "unauthorized" } });
    }
    // The modern surface too; another scheme is no bearer credential either (RFC 6750 §3.1: no error code).
    const modern = await modernRpc(gw.url, "tools/list", {}, { headers: { authorization: "Basic YWxpY2U6cHc=" } });
    expect(modern.status).toBe(401);
    expect(modern.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadata}"`);
    // A malformed bearer header is a bad request, and says so.
    const malformed = await modernRpc(gw.url, "tools/list", {}, { headers: { authorization: "Bearer a b" } });
    expect(malformed.headers.get("www-authenticate")).toMatch(
      /^Bearer error="invalid_request", error_description="malformed Authorization header"/,
    );
  });

  it("an expired token gets invalid_token with a precise description, and the token never reaches a log line", async () => {
    const gw = await gatewayWith();
    const expired = await idp.token("alice", { nowSec: Math.floor(Date.now() / 1000) - 3_600, ttlSec: 60 });
    const res = await modernRpc(gw.url, "tools/list", {}, { headers: bearer(expired) });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate") ?? "";
    expect(challenge).toMatch(
      /^Bearer error="invalid_token", error_description="[^"]*expired[^"]*", resource_metadata="/,
    );
    expect(lines.join("\n")).not.toContain(expired);
  });

  it("serves the RFC 9728 document at the path-specific and the root well-known URL", async () => {
    const gw = await gatewayWith();
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const res = await fetch(`${gw.origin}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        resource: RESOURCE,
        authorization_servers: [idp.issuer],
        bearer_methods_supported: ["header"],
      });
    }
  });

  it("a JWKS that is down gives 503 auth_unavailable, never a pass, and the gateway recovers by itself", async () => {
    const gw = await gatewayWith();
    const token = await idp.token("alice");
    await idp.setDown(true);
    const down = await modernRpc(gw.url, "tools/list", {}, { headers: bearer(token) });
    expect(down.status).toBe(503);
    expect(down.message.error).toMatchObject({ data: { reason: "auth_unavailable" } });
    expect(down.headers.get("retry-after")).not.toBeNull();
    const ready = await fetch(`${gw.origin}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: "degraded", auth: "unavailable" });
    await idp.setDown(false);
    // After a failed fetch the verifier waits a moment before it fetches again; then it is back.
    const up = await pollUntil(
      () => modernRpc(gw.url, "tools/list", {}, { headers: bearer(token) }),
      (r) => r.status === 200,
    );
    expect(up.status).toBe(200);
    expect(Array.isArray((up.message.result as { tools?: unknown }).tools)).toBe(true);
    expect(await (await fetch(`${gw.origin}/readyz`)).json()).toMatchObject({ status: "ready", auth: "ready" });
  });
});

describe("auth.jwt: identity", () => {
  it("a refreshed token for the same subject keeps its task; another subject sees none", async () => {
    const gw = await gatewayWith({ tasks: { rules: [{ tool: "slow_task", mode: "always" }] } });
    const first = await idp.token("alice");
    const created = await call(gw.url, "slow_task", { durationMs: 300, steps: 1 }, first);
    const result = created.message.result as { resultType: string; taskId: string };
    expect(result.resultType).toBe("task");

    // The client refreshes its token: a different string, the same issuer and subject.
    const refreshed = await idp.token("alice", { nowSec: Math.floor(Date.now() / 1000) + 1 });
    expect(refreshed).not.toBe(first);
    const done = await pollUntil(
      () => taskGet(gw.url, result.taskId, refreshed),
      (r) => (r.message.result as { status?: string } | undefined)?.status === "completed",
    );
    expect(done.message.result).toMatchObject({ taskId: result.taskId, status: "completed" });

    const other = await taskGet(gw.url, result.taskId, await idp.token("bob"));
    expect(other.message.error).toMatchObject({ code: -32602 });
    const cancel = await modernRpc(
      gw.url,
      "tasks/cancel",
      { taskId: result.taskId },
      { capabilities: DECLARING, headers: bearer(await idp.token("bob")) },
    );
    expect(cancel.message.error).toMatchObject({ code: -32602 });
  });

  it("the upstream sees the verified subject in identity mode, never the token, and a forged subject header is replaced", async () => {
    const gw = await gatewayWith({}, { upstreamCredentials: "identity" });
    const token = await idp.token("alice");
    const before = recorder.exchanges.length;
    const res = await call(gw.url, "echo", { text: "hi" }, token);
    expect(res.status).toBe(200);
    // A legacy client through the pass-through, with a forged subject header.
    const init = await fetch(gw.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        ...bearer(token),
        "x-mcp-gateway-subject": "mallory",
      },
      body: JSON.stringify(INIT_REQUEST),
    });
    expect(init.status).toBe(200);
    await init.text();
    const seen = recorder.exchanges.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const exchange of seen) {
      expect(exchange.headers.authorization).toBeUndefined();
      expect(exchange.headers["x-mcp-gateway-subject"]).toBe("alice");
    }
  });

  it("a CORS preflight, which needs no token, still goes upstream without the client's token or a forged subject", async () => {
    const gw = await gatewayWith({}, { upstreamCredentials: "identity" });
    const before = recorder.exchanges.length;
    const res = await fetch(gw.url, {
      method: "OPTIONS",
      headers: {
        ...bearer(await idp.token("alice")),
        "x-mcp-gateway-subject": "mallory",
        "access-control-request-method": "POST",
      },
    });
    await res.arrayBuffer();
    const seen = recorder.exchanges.slice(before).filter((e) => e.method === "OPTIONS");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers.authorization).toBeUndefined();
    expect(seen[0]?.headers["x-mcp-gateway-subject"]).toBeUndefined();
  });

  it("a request is served under the policy its token was checked under, even when a reload lands while its body arrives", async () => {
    const input = (upstreamCredentials: "forward" | "identity"): GatewayConfigInput => ({
      upstream: { url: recorder.url },
      server: { host: "127.0.0.1", port: 0 },
      auth: {
        jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE, jwksCooldownMs: 0 },
        upstreamCredentials,
      },
    });
    const gw = await startGateway(input("forward"), { logger: createLogger("silent") });
    gateways.push(gw);
    const token = await idp.token("alice");
    const before = recorder.exchanges.length;
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "hi" }, _meta: modernMeta() },
    });
    const answer = new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        gw.url,
        {
          method: "POST",
          headers: {
            ...modernHeaders("tools/call", "echo"),
            ...bearer(token),
            "x-mcp-gateway-subject": "mallory",
            "content-length": String(Buffer.byteLength(body)),
          },
        },
        (res) => {
          res.resume();
          res.once("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.once("error", reject);
      // The token is checked under "forward" (the client's headers go upstream as they are); the body is still coming.
      req.write(body.slice(0, 10));
      setTimeout(() => {
        // Identity mode trusts x-mcp-gateway-subject upstream: a forged one must not get there under the old check.
        gw.reload(input("identity"));
        req.end(body.slice(10));
      }, 300);
    });
    expect(await answer).toBe(200);
    const seen = recorder.exchanges.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const exchange of seen) expect(exchange.headers["x-mcp-gateway-subject"]).not.toBe("mallory");
  });

  it("drop mode sends neither the token nor a subject", async () => {
    const gw = await gatewayWith();
    const before = recorder.exchanges.length;
    expect((await call(gw.url, "echo", { text: "hi" }, await idp.token("alice"))).status).toBe(200);
    const seen = recorder.exchanges.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const exchange of seen) {
      expect(exchange.headers.authorization).toBeUndefined();
      expect(exchange.headers["x-mcp-gateway-subject"]).toBeUndefined();
    }
  });
});

describe("auth.jwt: policy by caller and the audit trail", () => {
  it("a claim-matched rule gives the batch client a task at once and everyone else a plain call", async () => {
    const gw = await gatewayWith({
      tasks: { rules: [{ tool: "slow_task", match: { azp: "batch-*" }, mode: "always" }] },
    });
    const batch = await call(
      gw.url,
      "slow_task",
      { durationMs: 10, steps: 1 },
      await idp.token("svc", { claims: { azp: "batch-nightly" } }),
    );
    expect((batch.message.result as { resultType: string }).resultType).toBe("task");
    const web = await call(
      gw.url,
      "slow_task",
      { durationMs: 10, steps: 1 },
      await idp.token("alice", { claims: { azp: "web-ui" } }),
    );
    expect((web.message.result as { resultType: string }).resultType).toBe("complete");
  });

  it("audit lines name the subject and tool, and carry no token", async () => {
    const gw = await gatewayWith({
      tasks: { rules: [{ tool: "slow_task", mode: "always" }] },
      access: { rules: [{ tools: "fail", effect: "deny" }] },
    });
    const token = await idp.token("alice");
    const created = await call(gw.url, "slow_task", { durationMs: 10, steps: 1 }, token);
    const { taskId } = created.message.result as { taskId: string };
    await pollUntil(
      () => taskGet(gw.url, taskId, token),
      (r) => (r.message.result as { status?: string } | undefined)?.status === "completed",
    );
    const denied = await call(gw.url, "fail", {}, token);
    expect(denied.message.error).toMatchObject({ code: -32602, data: { reason: "access_denied" } });
    const audit = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === "audit");
    expect(audit.map((l) => l.audit)).toEqual(["task.created", "task.completed", "access.denied"]);
    for (const line of audit) expect(line).toMatchObject({ subject: "alice" });
    expect(audit[1]).toMatchObject({
      tool: "slow_task",
      outcome: "completed",
      task: taskRef(taskId),
      upstream: "default",
    });
    expect(typeof audit[1]?.duration_ms).toBe("number");
    expect(lines.join("\n")).not.toContain(token);
  });
});

describe("auth.jwt with replicas sharing tasks", () => {
  it("a cancel forwarded to the replica running the task carries the client's token there, and the refreshed token still owns it", async () => {
    const redis = await testRedis();
    try {
      const shared = {
        tasks: {
          store: TEST_REDIS_URL,
          storePrefix: redis.prefix,
          leaseMs: 1_000,
          rules: [{ tool: "slow_task", mode: "always" as const }],
        },
      };
      const a = await gatewayWith(shared, { upstreamCredentials: "identity" });
      const b = await gatewayWith(shared, { upstreamCredentials: "identity" });
      const created = await call(a.url, "slow_task", { durationMs: 20_000, steps: 100 }, await idp.token("alice"));
      const { taskId } = created.message.result as { taskId: string };
      // Another subject is told the task does not exist, on either replica.
      const foreign = await modernRpc(
        b.url,
        "tasks/cancel",
        { taskId },
        { capabilities: DECLARING, headers: bearer(await idp.token("bob")) },
      );
      expect(foreign.message.error).toMatchObject({ code: -32602 });
      // B forwards alice's cancel, with her refreshed token, to A, which authenticates it again and applies it.
      const refreshed = await idp.token("alice", { nowSec: Math.floor(Date.now() / 1000) + 2 });
      const cancel = await modernRpc(
        b.url,
        "tasks/cancel",
        { taskId },
        { capabilities: DECLARING, headers: bearer(refreshed) },
      );
      expect(cancel.status).toBe(200);
      expect(cancel.message.error).toBeUndefined();
      const after = await taskGet(b.url, taskId, refreshed);
      expect(after.message.result).toMatchObject({ taskId, status: "cancelled" });
    } finally {
      await Promise.all(gateways.splice(0).map((g) => g.close(0)));
      await redis.cleanup();
    }
  });
});
