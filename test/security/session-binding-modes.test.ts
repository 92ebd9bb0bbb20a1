// Stops: a verified caller taking over another caller's legacy session by presenting its Mcp-Session-Id, when the
// token is not dropped (auth.upstreamCredentials "identity" or "forward") (issue 33, finding 5).
//
// The attack: the gateway binds a session to the caller of its first request only in "drop" mode, on the theory that
// in the other modes the upstream can tell callers apart. A stdio upstream cannot: the gateway itself serves its
// sessions (one child per session) and nothing checks who presents the id. So caller B, with a valid token for
// another subject, lists tools on A's session and DELETEs it (ending A's child).
// Fixed behaviour: every mode binds a session to its caller; B gets 404 (session not found) on POST and DELETE, and
// A's session goes on working (a refreshed token for A's subject too). A is a real SDK 1.x client; the upstream is
// server-everything over stdio; tokens come from a local JWKS (jwks.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import type { TestGateway } from "../helpers/gateway.js";
import { bearerPost } from "../helpers/http.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import { everythingCommand } from "../helpers/stdio-servers.js";

const RESOURCE = "https://gateway.test/mcp";

let idp: TestIdp;
beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
});
afterAll(async () => {
  await idp?.close();
});

function toolsList(url: string, token: string, sessionId: string, id: number): Promise<Response> {
  return bearerPost(url, token, { jsonrpc: "2.0", id, method: "tools/list" }, sessionId);
}

function deleteSession(url: string, token: string, sessionId: string): Promise<Response> {
  return fetch(url, {
    method: "DELETE",
    headers: { authorization: `Bearer ${token}`, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
  });
}

describe.each(["identity", "forward"] as const)("auth.jwt, upstreamCredentials %s, stdio upstream", (mode) => {
  let gateway: TestGateway | undefined;
  let alice: SdkClientHandle | undefined;
  beforeAll(async () => {
    gateway = await startGateway({
      upstream: { command: everythingCommand() },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "silent" },
      auth: {
        jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE },
        upstreamCredentials: mode,
      },
    });
    alice = await connectSdkClient(gateway.url, { headers: { authorization: `Bearer ${await idp.token("alice")}` } });
  });
  afterAll(async () => {
    await alice?.transport.terminateSession().catch(() => undefined);
    await alice?.close();
    await gateway?.close(0);
  });

  /** Alice's session is untouched: her client goes on, and a refreshed token for her subject is still hers. */
  async function expectAliceStillServed(url: string, sessionId: string): Promise<void> {
    expect((await (alice as SdkClientHandle).client.listTools()).tools.length).toBeGreaterThan(0);
    const refreshed = await toolsList(url, await idp.token("alice", { ttlSec: 600 }), sessionId, 72);
    expect(refreshed.status).toBe(200);
    expect(await refreshed.text()).toContain('"tools"');
  }

  it("another verified caller presenting A's Mcp-Session-Id on a POST gets 404; A's session still works", async () => {
    const url = (gateway as TestGateway).url;
    const sessionId = (alice as SdkClientHandle).sessionId() as string;
    expect(sessionId).toBeTruthy();
    expect((await (alice as SdkClientHandle).client.listTools()).tools.length).toBeGreaterThan(0);

    // The attack: mallory's valid token is enough to use alice's session.
    const stolen = await toolsList(url, await idp.token("mallory"), sessionId, 71);
    const text = await stolen.text();
    expect(stolen.status, `mallory's tools/list on alice's session: ${text.slice(0, 120)}`).toBe(404);
    expect(text).not.toContain('"tools"');
    expect(text).toContain('"session_not_found"');
    await expectAliceStillServed(url, sessionId);
  });

  it("another verified caller presenting A's Mcp-Session-Id on a DELETE gets 404; A's session still works", async () => {
    const url = (gateway as TestGateway).url;
    const sessionId = (alice as SdkClientHandle).sessionId() as string;
    // The attack: mallory's valid token is enough to end alice's session (and its stdio child).
    const ended = await deleteSession(url, await idp.token("mallory"), sessionId);
    const text = await ended.text();
    expect(ended.status, `mallory's DELETE of alice's session: ${text.slice(0, 120)}`).toBe(404);
    await expectAliceStillServed(url, sessionId);
  });
});
