// A local identity provider for tests: RSA keys made with jose, a JWKS endpoint
// on 127.0.0.1 (port 0) that can rotate its key or go down, and signed tokens.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from "jose";

export interface TestIdp {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** JWKS requests served so far. */
  readonly fetches: number;
  /** A token for `sub` signed with the current key; `iat` and `exp` from `nowSec` (default: the real clock). */
  token(sub: string, opts?: { claims?: JWTPayload; nowSec?: number; ttlSec?: number }): Promise<string>;
  /** Replaces the signing key (a new kid); the JWKS then serves only the new key. */
  rotate(): Promise<void>;
  /** While down, the JWKS endpoint refuses connections. */
  setDown(down: boolean): Promise<void>;
  close(): Promise<void>;
}

interface Key {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function newKey(n: number): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const kid = `key-${n}`;
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" } };
}

export async function startTestIdp(opts: { audience?: string } = {}): Promise<TestIdp> {
  let generation = 1;
  let key = await newKey(generation);
  let fetches = 0;
  const handler = (_req: unknown, res: import("node:http").ServerResponse): void => {
    fetches++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys: [key.jwk] }));
  };
  let server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}/realms/test`;
  const audience = opts.audience ?? "https://gateway.test/mcp";
  const stop = (s: Server): Promise<void> =>
    new Promise((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  let down = false;
  return {
    issuer,
    audience,
    jwksUrl: `http://127.0.0.1:${port}/realms/test/certs`,
    get fetches() {
      return fetches;
    },
    token: async (sub, o = {}) => {
      const now = o.nowSec ?? Math.floor(Date.now() / 1000);
      return new SignJWT({ ...o.claims })
        .setProtectedHeader({ alg: "RS256", kid: key.kid })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(sub)
        .setIssuedAt(now)
        .setExpirationTime(now + (o.ttlSec ?? 300))
        .sign(key.privateKey);
    },
    rotate: async () => {
      key = await newKey(++generation);
    },
    setDown: async (value) => {
      if (value === down) return;
      down = value;
      if (down) await stop(server);
      else {
        // The same port again, so the configured jwksUrl works once it is back.
        server = createServer(handler);
        await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
      }
    },
    close: async () => {
      if (!down) await stop(server);
    },
  };
}
