// One verified caller cannot take every stdio process (issue 34, finding 4): upstream.maxProcessesPerCaller gives
// each caller a share of upstream.maxProcesses. A caller over its share gets 429 too_many_processes_for_caller
// (counted in mcp_gateway_upstream_process_refusals_total), and the other callers still get their processes.
// A real stdio server (the project's fault server, whose echo tool answers at once) and real tokens (jwks.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import type { TestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT } from "../helpers/http.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { pollUntil } from "../helpers/poll.js";
import { faultCommand } from "../helpers/stdio-servers.js";

const RESOURCE = "https://gateway.test/mcp";

let idp: TestIdp;
let gateway: TestGateway;
const opened: Array<{ token: string; sessionId: string }> = [];

beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
  gateway = await startGateway({
    upstream: { command: faultCommand(), maxProcesses: 4, maxProcessesPerCaller: 2 },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    metrics: { enabled: true },
    auth: { jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE } },
  });
});

afterAll(async () => {
  for (const { token, sessionId } of opened.splice(0))
    await fetch(gateway.url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}`, "mcp-session-id": sessionId },
    }).then((r) => r.arrayBuffer());
  await gateway?.close(0);
  await idp?.close();
});

async function initialize(
  token: string,
): Promise<{ status: number; body: Record<string, unknown>; sessionId?: string }> {
  const res = await fetch(gateway.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: MCP_ACCEPT, authorization: `Bearer ${token}` },
    body: JSON.stringify(INIT_REQUEST),
  });
  const text = await res.text();
  const sessionId = res.headers.get("mcp-session-id") ?? undefined;
  if (sessionId) opened.push({ token, sessionId });
  // An event stream (the SDK's transport) or JSON: the answer is the first event with data.
  const json = text.startsWith("{") ? text : (/^data: (.+)$/m.exec(text)?.[1] ?? "{}");
  return { status: res.status, body: JSON.parse(json) as Record<string, unknown>, ...(sessionId && { sessionId }) };
}

describe("upstream.maxProcessesPerCaller", () => {
  it("refuses a caller over its share with 429, counts it, and leaves the other callers their processes", async () => {
    const ada = await idp.token("ada");
    const bob = await idp.token("bob");
    for (let i = 0; i < 2; i++) expect((await initialize(ada)).sessionId).toBeDefined();
    const over = await initialize(ada);
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error: { data: { reason: "too_many_processes_for_caller", limit: 2 } } });
    // A refreshed token is the same caller, with the same share.
    expect((await initialize(await idp.token("ada", { ttlSec: 600 }))).status).toBe(429);
    // Another caller still gets its own share of maxProcesses.
    for (let i = 0; i < 2; i++) expect((await initialize(bob)).sessionId).toBeDefined();
    const metrics = await (await fetch(`${gateway.origin}/metrics`)).text();
    expect(metrics).toMatch(
      /mcp_gateway_upstream_process_refusals_total\{upstream="default",reason="caller_share",replica="[^"]+"\} 2/,
    );
  });

  it("gives a caller its share back when one of its sessions ends", async () => {
    const ada = opened.find((o) => o.token !== undefined);
    expect(ada).toBeDefined();
    if (!ada) return;
    const del = await fetch(gateway.url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${ada.token}`, "mcp-session-id": ada.sessionId },
    });
    expect(del.status).toBeLessThan(300);
    opened.splice(opened.indexOf(ada), 1);
    // The share comes back once the session's child has ended (the DELETE is answered before it exits).
    const again = await pollUntil(
      () => initialize(ada.token),
      (r) => r.sessionId !== undefined,
    );
    expect(again.sessionId).toBeDefined();
  });
});
