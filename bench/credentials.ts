// Upstream credentials' added cost (issue 35), in process, on the code as it runs (tsx): a token-cache hit (what
// every request to an upstream with oauth pays once its token is held), and, against a real authorization server
// (oidc-provider, the tests' own) on loopback, a client-credentials fetch and a token exchange (what a miss pays,
// once per token lifetime; per caller and presented token for an exchange).
//
//   node --import tsx bench/credentials.ts [--iterations 1000000] [--fetches 200]
import { performance } from "node:perf_hooks";
import { TokenCache } from "../src/credentials/token-cache.js";
import { buildCredentialSource } from "../src/credentials/build.js";
import { oauthSchema } from "../src/config/oauth-schema.js";
import { startAuthServer, TOKEN_EXCHANGE } from "../test/helpers/oauth-server.js";
import { startTestIdp } from "../test/helpers/jwks.js";

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const N = arg("iterations", 1_000_000);
const FETCHES = arg("fetches", 200);

async function time(label: string, n: number, body: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < Math.min(n, 1_000); i++) await body(i);
  const start = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) await body(i);
  const wallUs = ((performance.now() - start) * 1e3) / n;
  const used = process.cpuUsage(cpu);
  const cpuUs = (used.user + used.system) / n;
  process.stdout.write(
    `${label.padEnd(52)} ${wallUs.toFixed(2).padStart(9)} µs wall  ${cpuUs.toFixed(2).padStart(9)} µs CPU  (${n})\n`,
  );
}

const cache = new TokenCache({ maxEntries: 10_000, skewMs: 30_000, defaultTtlMs: 300_000, now: Date.now });
await cache.get("k", async () => ({ accessToken: "t", expiresAt: Date.now() + 3_600_000 }));
await time("token cache hit", N, () => cache.get("k", () => Promise.reject(new Error("miss"))));

const idp = await startTestIdp({ audience: "https://gateway.test/mcp" });
const as = await startAuthServer({ subjectIssuers: [{ issuer: idp.issuer, jwksUrl: idp.jwksUrl }] });
try {
  const service = await as.registerClient({ grant_types: ["client_credentials", TOKEN_EXCHANGE] });
  const base = { issuer: as.issuer, clientId: service.clientId, clientSecret: service.clientSecret };
  const cc = buildCredentialSource(
    "bench",
    "http://127.0.0.1:1/mcp",
    oauthSchema.parse({ mode: "clientCredentials", ...base }),
    { now: Date.now, observer: undefined },
  );
  const request = { upstream: "bench", caller: "c", origin: "http://127.0.0.1" };
  await time("clientCredentials: a fresh token (miss)", FETCHES, () => cc.get({ ...request, fresh: true }));
  await time("clientCredentials: a cached token (hit)", N / 10, () => cc.get(request));
  const te = buildCredentialSource(
    "bench",
    "http://127.0.0.1:1/mcp",
    oauthSchema.parse({ mode: "tokenExchange", ...base }),
    { now: Date.now, observer: undefined },
  );
  const token = await idp.token("alice", { ttlSec: 3_600 });
  await time("tokenExchange: an exchange (miss)", FETCHES, () => te.get({ ...request, token, fresh: true }));
  await time("tokenExchange: a cached exchange (hit)", N / 10, () => te.get({ ...request, token }));
} finally {
  await as.close();
  await idp.close();
}
