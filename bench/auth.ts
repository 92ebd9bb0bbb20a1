// What verifying a bearer JWT costs per request (auth.jwt): CPU per verify for
// RS256 and ES256 tokens against inline keys (no network), measured with
// process.cpuUsage: the full check (auth.jwt.verifiedCacheMs 0), and a poller
// repeating one token with the verified-token cache on (the default).
//
//   node --import tsx bench/auth.ts [--n 5000]
import { parseArgs } from "node:util";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { parseConfig } from "../src/config/validate.js";
import { JwtVerifier } from "../src/auth/jwt-verifier.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "5000" } } });
const n = Number(values.n);

async function measure(alg: "RS256" | "ES256"): Promise<{ alg: string; fullUs: number; cachedUs: number }> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg };
  const config = parseConfig({
    upstream: { url: "http://127.0.0.1:9/mcp" },
    auth: {
      jwt: { jwks: { keys: [jwk] }, issuer: "https://idp.test", audience: "https://gw.test/mcp", algorithms: [alg] },
    },
  });
  const cachedVerifier = new JwtVerifier({ config: config.auth!.jwt });
  const fullVerifier = new JwtVerifier({ config: { ...config.auth!.jwt, verifiedCacheMs: 0 } });
  const sign = (sub: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg, kid: "k1" })
      .setIssuer("https://idp.test")
      .setAudience("https://gw.test/mcp")
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
  const same = `Bearer ${await sign("alice")}`;
  const cpu = async (verifier: JwtVerifier): Promise<number> => {
    for (let i = 0; i < 500; i++) await verifier.verify(same); // warm-up
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const out = await verifier.verify(same);
      if (!out.ok) throw new Error(out.description);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / n;
  };
  return { alg, fullUs: await cpu(fullVerifier), cachedUs: await cpu(cachedVerifier) };
}

const rows = [await measure("RS256"), await measure("ES256")];
console.log(`node ${process.version}, ${n} verifies each`);
console.log("| alg | CPU µs per request, full check | CPU µs per request, verified-token cache (default) |");
console.log("|---|---:|---:|");
for (const r of rows) console.log(`| ${r.alg} | ${r.fullUs.toFixed(1)} | ${r.cachedUs.toFixed(1)} |`);
