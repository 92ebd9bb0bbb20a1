// A federated endpoint under auth.jwt checks the token itself, as a route does: no token, or a bad one, is a
// 401 with the challenge (not a list every member refused, nor a legacy session opened for nobody), and a
// good one is served, its caller the same on every member route.
import { legacyInitialize } from "../helpers/http.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { modernRpc } from "../helpers/modern-rpc.js";
import type { TestGateway } from "../helpers/gateway.js";

const RESOURCE = "https://gateway.test/mcp";
let idp: TestIdp;
let legacy: SdkUpstream;
let modern: ModernUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
  legacy = await startSdkUpstream();
  modern = await startModernUpstream();
  gateway = await startManyGateway({
    upstreams: { one: { url: legacy.url }, two: { url: modern.url, era: "modern" } },
    federated: { pair: { upstreams: ["one", "two"] } },
    auth: { jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE } },
  });
});

afterAll(async () => {
  await gateway?.close();
  await legacy?.close();
  await modern?.close();
  await idp?.close();
});

describe("a federated endpoint under auth.jwt", () => {
  it("answers a request without a token 401 with a Bearer challenge", async () => {
    const answer = await modernRpc(`${gateway.url}/pair`, "tools/list", {});
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate") ?? "").toMatch(/^Bearer/);
    expect(answer.body.error?.data?.reason).toBe("unauthorized");
  });

  it("answers a token that does not verify 401 too", async () => {
    const answer = await modernRpc(
      `${gateway.url}/pair`,
      "tools/list",
      {},
      { headers: { authorization: "Bearer not.a.token" } },
    );
    expect(answer.status).toBe(401);
  });

  it("refuses a legacy initialize without a token 401, opening no session", async () => {
    const res = await fetch(`${gateway.url}/pair`, legacyInitialize());
    expect(res.status).toBe(401);
    expect(res.headers.get("mcp-session-id")).toBeNull();
  });

  it("serves a verified caller the lists of both members", async () => {
    const token = await idp.token("alice");
    const answer = await modernRpc(
      `${gateway.url}/pair`,
      "tools/list",
      {},
      { headers: { authorization: `Bearer ${token}` } },
    );
    const names = ((answer.body.result?.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
    expect(names).toContain("one__echo");
    expect(names).toContain("two__echo");
  });
});
