// A token exchange (upstream credentials, issue 35), priced by the regression guard (issue 38 item 6): the wall time
// of `tokenExchange` fetching a fresh token from a real authorization server (oidc-provider, the tests' own, in this
// process on loopback), divided by that of a bare form POST to a node:http server in this process that answers a
// token at once. The exchange pays its request, the server's work (verifying the subject token, signing an access
// token) and the gateway's reading of the answer; the POST only the round trip on loopback, measured in the same
// rounds (alternating) so that the machine's speed moves both sides.
//
// Aim, set before measuring: an exchange ≤ 40× a bare loopback POST (a miss is paid once per caller and presented
// token per token lifetime; 40× a ~0.1 ms POST is a few ms, which a task's first call can bear).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { buildCredentialSource } from "../../src/credentials/build.js";
import { oauthSchema } from "../../src/config/oauth-schema.js";
import { median, roundRatios, type CheckMetric } from "./check.js";

export const EXCHANGE_METRIC: CheckMetric = {
  key: "credentials/exchange",
  label: "token exchange ÷ bare loopback POST (wall)",
  better: "lower",
};
export const EXCHANGE_AIM = 40;

/** Per round, the median wall ms of an exchange and of a bare POST. */
export interface ExchangeFigures {
  exchangeMs: number[];
  postMs: number[];
}

async function wallMs(n: number, body: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await body();
    times.push(performance.now() - t0);
  }
  return median(times) ?? NaN;
}

export async function measureExchange(rounds: number, perRound: number): Promise<ExchangeFigures> {
  // Loaded here, not at the harness's start: oidc-provider is only needed by this figure.
  const { startAuthServer, TOKEN_EXCHANGE } = await import("../../test/helpers/oauth-server.js");
  const { startTestIdp } = await import("../../test/helpers/jwks.js");
  const idp = await startTestIdp({ audience: "https://gateway.test/mcp" });
  const as = await startAuthServer({ subjectIssuers: [{ issuer: idp.issuer, jwksUrl: idp.jwksUrl }] });
  const answer = JSON.stringify({ access_token: "t".repeat(600), token_type: "Bearer", expires_in: 300 });
  const bare = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(answer));
  });
  await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/token`;
  try {
    const service = await as.registerClient({ grant_types: ["client_credentials", TOKEN_EXCHANGE] });
    const source = buildCredentialSource(
      "bench",
      "http://127.0.0.1:1/mcp",
      oauthSchema.parse({
        mode: "tokenExchange",
        issuer: as.issuer,
        clientId: service.clientId,
        clientSecret: service.clientSecret,
      }),
      { now: Date.now, observer: undefined },
    );
    const token = await idp.token("alice", { ttlSec: 3_600 });
    const req = { upstream: "bench", caller: "c", origin: "http://127.0.0.1", token, fresh: true };
    const form = new URLSearchParams({ grant_type: TOKEN_EXCHANGE, subject_token: token }).toString();
    const exchange = (): Promise<unknown> => source.get(req);
    const post = async (): Promise<unknown> => {
      const r = await request(bareUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form,
      });
      return r.body.json();
    };
    await wallMs(Math.max(5, perRound / 4), exchange);
    await wallMs(Math.max(5, perRound / 4), post);
    const out: ExchangeFigures = { exchangeMs: [], postMs: [] };
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        out.exchangeMs.push(await wallMs(perRound, exchange));
        out.postMs.push(await wallMs(perRound, post));
      } else {
        out.postMs.push(await wallMs(perRound, post));
        out.exchangeMs.push(await wallMs(perRound, exchange));
      }
    }
    return out;
  } finally {
    bare.closeAllConnections();
    await new Promise((resolve) => bare.close(resolve));
    await as.close();
    await idp.close();
  }
}

export const exchangeRatios = (f: ExchangeFigures): number[] => roundRatios(f.exchangeMs, f.postMs);
