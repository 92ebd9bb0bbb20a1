// Issue 33, finding 7: a legacy (SDK 1.x, 2025-11-25) client with a valid bearer token can use a federated
// endpoint under auth.jwt with auth.upstreamCredentials "drop" (the default), and one without a valid token cannot.
// "identity" (the token dropped too, the subject sent in a header of the gateway's) loses the token the same way
// today, and is checked the same way.
//
// What it stops: the federated endpoint serves a legacy client by sending each request of its session back to
// itself over loopback with the client's credentials; under "drop" the gate has already removed Authorization
// from the headers it hands on, so the loopback request arrives without a token, is refused 401, and the
// client's initialize fails (502 upstream_no_answer). Legacy clients are locked out of a federated endpoint under
// the default auth settings, and the way back in is to forward tokens upstream (what the MCP authorization
// spec forbids) or to drop auth.jwt. Fixed, the loopback request carries the caller, the gate still checks the
// token at the door (none, or a bad one: 401), and upstreams still never see it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream } from "../fixtures/modern-upstream.js";
import { behindRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";

const RESOURCE = "https://gateway.test/mcp";
const PROTOCOL = "2025-11-25";

let idp: TestIdp;
let legacy: { url: string; upstream: SdkUpstream; recorder: RecordingProxy; close(): Promise<void> };
let modern: { url: string; recorder: RecordingProxy; close(): Promise<void> };
const clients: SdkClientHandle[] = [];

beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
  // Both members behind recording proxies: what each upstream receives is kept.
  legacy = await behindRecordingProxy(await startSdkUpstream());
  modern = await behindRecordingProxy(await startModernUpstream({ legacy: "reject" }));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

afterAll(async () => {
  await legacy?.close();
  await modern?.close();
  await idp?.close();
});

function textOf(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

/** A raw legacy initialize on `url`, with `headers`. */
async function initialize(url: string, headers: Record<string, string>): Promise<Response> {
  return await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "finding-7", version: "1" } },
    }),
  });
}

describe.each(["drop", "identity"] as const)(
  "an SDK 1.x client on a federated endpoint under auth.jwt with upstreamCredentials %s",
  (upstreamCredentials) => {
    let gateway: TestGateway;
    beforeAll(async () => {
      gateway = await startManyGateway({
        upstreams: { one: { url: legacy.url }, two: { url: modern.url, era: "modern" } },
        federated: { pair: { upstreams: ["one", "two"] } },
        auth: { jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE }, upstreamCredentials },
      });
    });
    afterAll(async () => {
      await gateway?.close();
    });
    const fed = (): string => `${gateway.url}/pair`;

    // Lock-out stopped: the default auth settings must not force an operator to forward client tokens to
    // third-party upstreams (or to turn auth.jwt off) for legacy clients to use a federated endpoint; and whatever
    // carries the caller on the loopback leg, a client without a good token still gets no session.
    it("gets in with a valid token only: 401 without one or with a bad one; with one, lists and calls both members", async () => {
      const expired = await idp.token("alice", { nowSec: Math.floor(Date.now() / 1000) - 3_600, ttlSec: 60 });
      const refusals: Array<Record<string, string>> = [
        {},
        { authorization: "Bearer not.a.token" },
        { authorization: `Bearer ${expired}` },
        { authorization: "Basic YWxpY2U6c2VjcmV0" },
      ];
      for (const headers of refusals) {
        const res = await initialize(fed(), headers);
        const what = JSON.stringify(headers);
        expect(res.status, what).toBe(401);
        expect(res.headers.get("www-authenticate") ?? "", what).toMatch(/^Bearer/);
        expect(res.headers.get("mcp-session-id"), what).toBeNull();
        await res.body?.cancel();
      }
      await expect(
        connectSdkClient(fed(), { headers: { authorization: "Bearer not.a.token" } }).then((h) => clients.push(h)),
      ).rejects.toThrow();

      const token = await idp.token("alice");
      const auth = { authorization: `Bearer ${token}` };
      // The initialize alone, as on the wire (today: 502 upstream_no_answer, the loopback request having lost
      // the token and been refused 401 by the endpoint itself).
      const raw = await initialize(fed(), auth);
      const rawText = await raw.text();
      expect(raw.status, rawText).toBe(200);
      const rawSession = raw.headers.get("mcp-session-id");
      expect(rawSession).toBeTruthy();
      await (
        await fetch(fed(), { method: "DELETE", headers: { ...auth, "mcp-session-id": rawSession ?? "" } })
      ).body?.cancel();

      const h = await connectSdkClient(fed(), { headers: auth });
      clients.push(h);
      expect(h.sessionId()).toBeDefined();
      const names = (await h.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("one__echo");
      expect(names).toContain("two__echo");
      expect(names.every((n) => n.startsWith("one__") || n.startsWith("two__"))).toBe(true);

      const one = await h.client.callTool({ name: "one__echo", arguments: { text: "to the legacy member" } });
      expect(textOf(one)).toBe("to the legacy member");
      const two = await h.client.callTool({ name: "two__echo", arguments: { text: "to the modern member" } });
      expect(textOf(two)).toBe("to the modern member");

      // The token still never goes upstream.
      for (const recorder of [legacy.recorder, modern.recorder]) {
        expect(recorder.exchanges.length).toBeGreaterThan(0);
        expect(recorder.exchanges.filter((e) => JSON.stringify(e.headers).includes(token))).toEqual([]);
      }
    });
  },
);
