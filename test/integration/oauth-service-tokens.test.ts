// Upstream credentials the gateway obtains itself (issue 35): a service account (clientCredentials) and a token
// exchanged for the caller's (tokenExchange, RFC 8693), against a real authorization server (oidc-provider) and an
// SDK upstream that verifies every bearer token's signature, issuer and audience and records who called.
// Both client eras, a named route and a federated endpoint.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthServer, TOKEN_EXCHANGE, type AuthServer } from "../helpers/oauth-server.js";
import { startTokenUpstream, type TokenUpstream } from "../helpers/token-upstream.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { callTool } from "../helpers/modern-rpc.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { createLogger } from "../../src/log/logger.js";
import { parseExposition, value } from "../helpers/prometheus.js";

const RESOURCE = "https://gateway.test/mcp";
let as: AuthServer;
let idp: TestIdp;
let upstream: TokenUpstream;
let gateway: TestGateway;
let serviceClient: string;
let signedClient: string;
const secrets: string[] = [];
let keyDir: string;
let exchangeClient: string;
/** The gateway's clock, moved by the tests (the authorization server and the upstream keep the real one). */
const clock = { offsetMs: 0 };
/** The upstream's clock, moved to make it refuse tokens the gateway still thinks good. */
const upstreamClock = { offsetMs: 0 };
const LOGS: string[] = [];

const textOf = (result: Record<string, unknown> | undefined): string =>
  ((result?.content ?? []) as Array<{ text?: string }>).map((c) => c.text ?? "").join("");

beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
  as = await startAuthServer({ subjectIssuers: [{ issuer: idp.issuer, jwksUrl: idp.jwksUrl }] });
  upstream = await startTokenUpstream({
    authServer: as,
    now: () => new Date(Date.now() + upstreamClock.offsetMs),
  });
  const service = await as.registerClient({ grant_types: ["client_credentials"] });
  const exchange = await as.registerClient({ grant_types: [TOKEN_EXCHANGE, "client_credentials"] });
  const signed = await as.registerPrivateKeyJwtClient({ grant_types: ["client_credentials"] });
  keyDir = await mkdtemp(join(tmpdir(), "gw-oauth-"));
  const keyFile = join(keyDir, "client.pem");
  await writeFile(keyFile, signed.privateKeyPem, { mode: 0o600 });
  signedClient = signed.clientId;
  secrets.push(service.clientSecret ?? "", exchange.clientSecret ?? "");
  serviceClient = service.clientId;
  exchangeClient = exchange.clientId;
  gateway = await startManyGateway(
    {
      upstreams: {
        service: {
          url: upstream.url,
          oauth: {
            mode: "clientCredentials",
            issuer: as.issuer,
            clientId: service.clientId,
            clientSecret: service.clientSecret,
          },
        },
        people: {
          url: upstream.url,
          oauth: {
            mode: "tokenExchange",
            tokenUrl: as.tokenUrl,
            clientId: exchange.clientId,
            clientSecret: exchange.clientSecret,
            clientAuth: "client_secret_post",
          },
        },
        // private_key_jwt (RFC 7523): a signed assertion, no shared secret.
        signed: {
          url: upstream.url,
          oauth: {
            mode: "clientCredentials",
            issuer: as.issuer,
            clientId: signed.clientId,
            privateKeyFile: keyFile,
            keyId: signed.kid,
          },
        },
        // A client the authorization server does not allow the token-exchange grant.
        refused: {
          url: upstream.url,
          oauth: {
            mode: "tokenExchange",
            issuer: as.issuer,
            clientId: service.clientId,
            clientSecret: service.clientSecret,
          },
        },
      },
      federated: { all: { upstreams: ["service", "people"] } },
      auth: { jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE } },
      log: { level: "warn" },
    },
    {
      now: () => Date.now() + clock.offsetMs,
      logger: createLogger("debug", (line) => void LOGS.push(line)),
    },
  );
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  await as?.close();
  await idp?.close();
  if (keyDir) await rm(keyDir, { recursive: true, force: true });
});

const bearer = async (sub: string) => ({ authorization: `Bearer ${await idp.token(sub)}` });

describe("clientCredentials: the gateway's own token for the upstream", () => {
  it("a 2026-07-28 client's call reaches the upstream as the service account, never with the caller's token", async () => {
    const answer = await callTool(`${gateway.url}/service`, "whoami", {}, { headers: await bearer("alice") });
    expect(answer.body.result?.isError).not.toBe(true);
    expect(textOf(answer.body.result)).toBe(`sub=${serviceClient} act=-`);
    const last = upstream.calls.at(-1);
    expect(last).toMatchObject({ tool: "whoami", sub: serviceClient, aud: upstream.audience });
  });

  it("a 2025-11-25 SDK client gets the same, and concurrent calls share one token", async () => {
    const before = as.tokenRequests.filter((r) => r.clientId === serviceClient).length;
    const client = await connectSdkClient(`${gateway.url}/service`, { headers: await bearer("bob") });
    try {
      const results = await Promise.all(
        Array.from({ length: 8 }, () => client.client.callTool({ name: "whoami", arguments: {} })),
      );
      for (const r of results) expect(textOf(r as Record<string, unknown>)).toBe(`sub=${serviceClient} act=-`);
    } finally {
      await client.close();
    }
    // The token from the first test is still good: no new token request at all.
    expect(as.tokenRequests.filter((r) => r.clientId === serviceClient).length).toBe(before);
  });

  it("a token near its expiry is replaced before it is sent", async () => {
    const before = as.tokenRequests.filter((r) => r.clientId === serviceClient && r.ok).length;
    // The server's tokens live 300 s; 280 s on, within refreshBeforeMs (30 s) of the end, the gateway asks anew.
    clock.offsetMs = 280_000;
    try {
      const answer = await callTool(`${gateway.url}/service`, "whoami", {}, { headers: await bearer("alice") });
      expect(textOf(answer.body.result)).toBe(`sub=${serviceClient} act=-`);
    } finally {
      clock.offsetMs = 0;
    }
    expect(as.tokenRequests.filter((r) => r.clientId === serviceClient && r.ok).length).toBe(before + 1);
  });

  it("authenticates with private_key_jwt when given a key file instead of a secret", async () => {
    const answer = await callTool(`${gateway.url}/signed`, "whoami", {}, { headers: await bearer("alice") });
    expect(textOf(answer.body.result)).toBe(`sub=${signedClient} act=-`);
  });

  it("an upstream that refuses the token gets one fresh token, then the client a clear error, not the challenge", async () => {
    const before = as.tokenRequests.filter((r) => r.clientId === serviceClient).length;
    // The upstream's clock is past every token's expiry: the fresh one is refused too.
    upstreamClock.offsetMs = 3_600_000;
    try {
      const answer = await callTool(`${gateway.url}/service`, "whoami", {}, { headers: await bearer("alice") });
      expect(answer.status).toBe(502);
      expect(answer.body.error?.data?.reason).toBe("upstream_credentials_rejected");
      expect(answer.headers.get("www-authenticate")).toBeNull();
      // The same through the 2025-11-25 pass-through.
      const legacy = await fetch(`${gateway.url}/service`, {
        method: "POST",
        headers: {
          ...(await bearer("alice")),
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      });
      expect(legacy.status).toBe(502);
      expect(((await legacy.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe(
        "upstream_credentials_rejected",
      );
    } finally {
      upstreamClock.offsetMs = 0;
    }
    // One fresh token per refused request, never a loop.
    expect(as.tokenRequests.filter((r) => r.clientId === serviceClient).length).toBe(before + 2);
    // And with the upstream's clock right again, the latest token works.
    const answer = await callTool(`${gateway.url}/service`, "whoami", {}, { headers: await bearer("alice") });
    expect(textOf(answer.body.result)).toBe(`sub=${serviceClient} act=-`);
  });
});

describe("tokenExchange: the caller's token exchanged for one minted for the upstream", () => {
  it("two users each reach the upstream as themselves, with the gateway as the actor", async () => {
    const alice = await callTool(`${gateway.url}/people`, "whoami", {}, { headers: await bearer("alice") });
    const bob = await callTool(`${gateway.url}/people`, "whoami", {}, { headers: await bearer("bob") });
    expect(textOf(alice.body.result)).toBe(`sub=alice act=${exchangeClient}`);
    expect(textOf(bob.body.result)).toBe(`sub=bob act=${exchangeClient}`);
  });

  it("a 2025-11-25 SDK client is exchanged too, once per presented token", async () => {
    const headers = await bearer("carol");
    const before = as.tokenRequests.filter((r) => r.grantType === TOKEN_EXCHANGE).length;
    const client = await connectSdkClient(`${gateway.url}/people`, { headers });
    try {
      for (let i = 0; i < 3; i++) {
        const r = await client.client.callTool({ name: "whoami", arguments: {} });
        expect(textOf(r as Record<string, unknown>)).toBe(`sub=carol act=${exchangeClient}`);
      }
    } finally {
      await client.close();
    }
    expect(as.tokenRequests.filter((r) => r.grantType === TOKEN_EXCHANGE).length).toBe(before + 1);
  });

  it("through the federated endpoint, each member gets its own credentials", async () => {
    const headers = await bearer("dave");
    const people = await callTool(`${gateway.url}/all`, "people__whoami", {}, { headers });
    const service = await callTool(`${gateway.url}/all`, "service__whoami", {}, { headers });
    expect(textOf(people.body.result)).toBe(`sub=dave act=${exchangeClient}`);
    expect(textOf(service.body.result)).toBe(`sub=${serviceClient} act=-`);
  });

  it("an exchange the authorization server refuses is a clear error, and nothing reaches the upstream", async () => {
    const calls = upstream.calls.length;
    const answer = await callTool(`${gateway.url}/refused`, "whoami", {}, { headers: await bearer("eve") });
    expect(answer.status).toBe(403);
    expect(answer.body.error?.data?.reason).toBe("upstream_credentials_refused");
    expect(answer.body.error?.message).toMatch(
      /^no credentials for upstream refused: token endpoint at http:\/\/127\.0\.0\.1:\d+ refused \(400/,
    );
    expect(upstream.calls.length).toBe(calls);
  });

  it("metrics count fetches, exchanges, cache hits and failures per upstream and mode, and name no token", async () => {
    const text = await (await fetch(`${gateway.metricsOrigin}/metrics`)).text();
    const series = parseExposition(text);
    const tokens = (labels: Record<string, string>) => value(series, "mcp_gateway_upstream_tokens_total", labels) ?? 0;
    expect(
      tokens({ upstream: "service", mode: "clientCredentials", kind: "fetch", outcome: "ok" }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      tokens({ upstream: "service", mode: "clientCredentials", kind: "cache_hit", outcome: "ok" }),
    ).toBeGreaterThan(0);
    expect(
      tokens({ upstream: "people", mode: "tokenExchange", kind: "exchange", outcome: "ok" }),
    ).toBeGreaterThanOrEqual(4);
    expect(tokens({ upstream: "refused", mode: "tokenExchange", kind: "exchange", outcome: "error" })).toBe(1);
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
  });

  it("no token, secret or assertion appears in the gateway's logs", () => {
    const logs = LOGS.join("\n");
    expect(logs).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
    for (const secret of secrets) expect(logs).not.toContain(secret);
  });
});
