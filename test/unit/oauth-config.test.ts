// upstreams.<name>.oauth: what each mode needs, and what it refuses to sit beside.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkConfig } from "../../src/check-config.js";
import { loadConfig } from "../../src/config/load.js";
import { ConfigError, parseConfig } from "../../src/config/validate.js";

const JWT = { jwt: { jwksUrl: "https://idp.example.com/jwks", issuer: "https://idp.example.com", audience: "gw" } };
const KEY = Buffer.alloc(32, 7).toString("base64");

function problemsOf(input: unknown): readonly string[] {
  try {
    parseConfig(input);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const withOAuth = (oauth: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  upstreams: { crm: { url: "https://crm.internal/mcp", oauth } },
  ...extra,
});

describe("upstreams.<name>.oauth", () => {
  it("accepts a service account with a discovered token endpoint and defaults the client authentication", () => {
    const config = parseConfig(
      withOAuth({ mode: "clientCredentials", issuer: "https://as.example.com", clientId: "gw", clientSecret: "s3" }),
    );
    const oauth = config.upstreams.crm?.oauth;
    expect(oauth).toMatchObject({ mode: "clientCredentials", scopes: [], refreshBeforeMs: 30_000 });
  });

  it("a service account needs a client id, an endpoint and a confidential client", () => {
    const problems = problemsOf(withOAuth({ mode: "clientCredentials" })).join("\n");
    expect(problems).toMatch(/clientId.*is required for clientCredentials/);
    expect(problems).toMatch(/clientCredentials needs issuer or tokenUrl/);
    expect(problems).toMatch(/needs a confidential client/);
  });

  it("refuses plain http to an authorization server off this host: tokens and secrets would cross in clear", () => {
    const problems = problemsOf(
      withOAuth({
        mode: "clientCredentials",
        tokenUrl: "http://as.example.com/token",
        clientId: "gw",
        clientSecret: "s",
      }),
    );
    expect(problems.join("\n")).toMatch(/tokenUrl.*https/);
    expect(
      problemsOf(
        withOAuth({
          mode: "clientCredentials",
          tokenUrl: "http://127.0.0.1:9/token",
          clientId: "gw",
          clientSecret: "s",
        }),
      ),
    ).toEqual([]);
  });

  it("a token exchange needs auth.jwt (the caller's verified token is what is exchanged)", () => {
    const oauth = { mode: "tokenExchange", issuer: "https://as.example.com", clientId: "gw", clientSecret: "s" };
    expect(problemsOf(withOAuth(oauth)).join("\n")).toMatch(/tokenExchange needs auth\.jwt/);
    expect(problemsOf(withOAuth(oauth, { auth: JWT }))).toEqual([]);
  });

  it("user consent needs auth.jwt and vault keys of 32 bytes", () => {
    const oauth = { mode: "userConsent", issuer: "https://as.example.com" };
    expect(problemsOf(withOAuth(oauth, { auth: JWT })).join("\n")).toMatch(/auth\.vault\.keys.*encrypted/);
    expect(problemsOf(withOAuth(oauth, { auth: { ...JWT, vault: { keys: ["c2hvcnQ="] } } })).join("\n")).toMatch(
      /32 bytes/,
    );
    expect(problemsOf(withOAuth(oauth, { auth: { ...JWT, vault: { keys: [KEY] } } }))).toEqual([]);
  });

  it("refuses an oauth block beside a static Authorization header, a forwarded caller token or a stdio command", () => {
    const oauth = { mode: "clientCredentials", issuer: "https://as.example.com", clientId: "gw", clientSecret: "s" };
    const headers = problemsOf({
      upstreams: { crm: { url: "https://crm.internal/mcp", oauth, headers: { Authorization: "Bearer x" } } },
    });
    expect(headers.join("\n")).toMatch(/choose one/);
    const forward = problemsOf({
      upstreams: { crm: { url: "https://crm.internal/mcp", oauth, auth: { upstreamCredentials: "forward" } } },
      auth: JWT,
    });
    expect(forward.join("\n")).toMatch(/upstreamCredentials is forward/);
    const stdio = problemsOf({ upstreams: { crm: { command: ["node", "server.js"], oauth } } });
    expect(stdio.join("\n")).toMatch(/oauth.*needs an HTTP upstream/);
  });

  it("private_key_jwt needs its key file, and actorToken belongs to a token exchange", () => {
    const problems = problemsOf(
      withOAuth({
        mode: "clientCredentials",
        issuer: "https://as.example.com",
        clientId: "gw",
        clientAuth: "private_key_jwt",
        actorToken: "clientCredentials",
      }),
    ).join("\n");
    expect(problems).toMatch(/privateKeyFile.*private_key_jwt/);
    expect(problems).toMatch(/actorToken.*tokenExchange only/);
  });
});

describe("--check on oauth blocks", () => {
  const base = { mode: "clientCredentials", issuer: "https://as.example.com", clientId: "gw" };

  it("reports a private_key_jwt key file that is missing or holds no key, naming the field and never a key", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gw-check-"));
    try {
      const notAKey = join(dir, "not-a-key.pem");
      await writeFile(notAKey, "hello");
      const config = parseConfig({
        upstreams: {
          one: { url: "https://one.internal/mcp", oauth: { ...base, privateKeyFile: join(dir, "absent.pem") } },
          two: { url: "https://two.internal/mcp", oauth: { ...base, privateKeyFile: notAKey } },
        },
      });
      expect(await checkConfig(config, {})).toEqual([
        `upstreams.one.oauth.privateKeyFile ${join(dir, "absent.pem")} cannot be read (ENOENT)`,
        `upstreams.two.oauth.privateKeyFile ${notAKey} holds no private key in PEM`,
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("reports a ${VAR} secret that is not set, by the variable's name", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gw-check-"));
    try {
      const file = join(dir, "gateway.yaml");
      await writeFile(
        file,
        [
          "upstreams:",
          "  crm:",
          "    url: https://crm.internal/mcp",
          "    oauth:",
          "      mode: clientCredentials",
          "      issuer: https://as.example.com",
          "      clientId: gw",
          "      clientSecret: ${CRM_CLIENT_SECRET}",
          "",
        ].join("\n"),
      );
      const failure = await loadConfig({ flags: {}, env: {}, configFile: file }).then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      expect(failure?.message ?? "").toMatch(/CRM_CLIENT_SECRET/);
      const loaded = await loadConfig({ flags: {}, env: { CRM_CLIENT_SECRET: "from-env" }, configFile: file });
      expect(loaded.upstreams.crm?.oauth?.clientSecret).toBe("from-env");

      // The vault's keys too.
      const vaultFile = join(dir, "vault.yaml");
      await writeFile(
        vaultFile,
        'upstream:\n  url: https://crm.internal/mcp\nauth:\n  jwt:\n    jwksUrl: https://idp.example.com/jwks\n    issuer: https://idp.example.com\n    audience: gw\n  vault:\n    keys: ["${VAULT_KEY}"]\n',
      );
      const unset = await loadConfig({ flags: {}, env: {}, configFile: vaultFile }).then(
        () => "",
        (err: unknown) => (err as Error).message,
      );
      expect(unset).toMatch(/auth\.vault\.keys\.0: names \$\{VAULT_KEY\}, which is not set/);
      const withKey = await loadConfig({ flags: {}, env: { VAULT_KEY: KEY }, configFile: vaultFile });
      expect(withKey.auth?.vault?.keys).toEqual([KEY]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
