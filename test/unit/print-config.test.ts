// --print-config: the effective configuration (file, environment and flags merged) with every secret masked.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_OK, EXIT_USAGE } from "../../src/cli.js";
import { runCliCaptured } from "../helpers/cli-run.js";
import { configJsonSchema } from "../../src/config/json-schema.js";
import { MASK, maskUrl, SECRET_FIELDS } from "../../src/commands/mask-secrets.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcp-gw-print-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const run = runCliCaptured;

// Every secret-bearing field set, from each source: the file (written out and through ${VAR}), the environment and
// a flag. Each secret holds "S3cr3t", which the output must never contain.
const PEM = "-----BEGIN PRIVATE KEY-----\nS3cr3t-pem-body\n-----END PRIVATE KEY-----\n";
const FILE = {
  upstream: {
    url: "https://user:S3cr3t-url-password@mcp.example.com/mcp?api_key=S3cr3t-query",
    headers: { "x-api-key": "S3cr3t-literal-header", authorization: "Bearer ${GITHUB_TOKEN}" },
    // Allowed beside a url (and unused there), so masked there too.
    env: { UPSTREAM_ENV: "S3cr3t-upstream-env" },
  },
  upstreams: {
    github: { url: "https://S3cr3t-token-as-user@api.example.com/mcp", headers: { cookie: "S3cr3t-cookie" } },
    files: {
      command: ["server", "--token", "S3cr3t-arg", "--db=postgres://u:S3cr3t-db@db.internal/x", "/srv/docs"],
      env: { API_KEY: "S3cr3t-env-value" },
    },
    crm: {
      url: "https://crm.example.com/mcp",
      oauth: {
        mode: "clientCredentials",
        issuer: "https://as.example.com",
        clientId: "gw",
        clientSecret: "${CRM_SECRET}",
      },
    },
  },
  auth: {
    jwt: { jwksUrl: "https://idp.example.com/jwks", issuer: "https://idp.example.com", audience: "gw" },
    vault: { keys: ["${VAULT_KEY}"] },
  },
  federated: { all: { upstreams: ["github", "files"] } },
  server: { internalTls: { cert: "/etc/gw/cert.pem", key: "/etc/gw/key.pem", ca: "/etc/gw/ca.pem" } },
  tasks: { redisTls: { key: PEM, ca: "/etc/gw/redis-ca.pem" } },
  eraBridge: { requestStateSecret: "S3cr3t-request-state-0123456789abcdef" },
  telemetry: { endpoint: "https://otel:S3cr3t-otel@otel.example.com/" },
};
const VAULT_KEY = Buffer.from("S3cr3t-vault-key-of-32-bytes-0123").subarray(0, 32).toString("base64");
const ENV = {
  GITHUB_TOKEN: "S3cr3t-from-env-ref",
  CRM_SECRET: "S3cr3t-oauth-client-secret",
  VAULT_KEY,
  MCP_GATEWAY_STORE: "redis-sentinel://default:S3cr3t-redis@10.0.0.1:26379,10.0.0.2:26379/2#primary",
};
const FLAGS = ["--metrics-token", "S3cr3t-metrics-token-0123456789"];

describe("--print-config", () => {
  let file: string;
  beforeAll(async () => {
    file = join(dir, "all-secrets.json");
    await writeFile(file, JSON.stringify(FILE));
  });

  it("prints the merged config as YAML with a header, every secret masked and everything else as it is", async () => {
    const r = await run(["--print-config", "--config", file, ...FLAGS], ENV);
    expect(r.code).toBe(EXIT_OK);
    expect(r.err).toBe("");
    expect(r.out).not.toContain("S3cr3t");
    expect(r.out).toMatch(
      /^# The effective configuration of mcp-task-gateway: .*all-secrets\.json, environment and flags/,
    );
    const shown = parse(r.out) as Record<string, any>;
    expect(shown.upstream.url).toBe(`https://user:${MASK}@mcp.example.com/mcp?${MASK}`);
    expect(shown.upstream.headers).toEqual({ "x-api-key": MASK, authorization: MASK });
    expect(shown.upstreams.github.url).toBe(`https://${MASK}@api.example.com/mcp`);
    expect(shown.upstreams.github.headers).toEqual({ cookie: MASK });
    expect(shown.upstreams.files.command).toEqual([
      "server",
      "--token",
      MASK,
      `--db=postgres://${MASK}@db.internal/x`,
      "/srv/docs",
    ]);
    expect(shown.upstreams.files.env).toEqual({ API_KEY: MASK });
    expect(shown.upstream.env).toEqual({ UPSTREAM_ENV: MASK });
    // The user, the hosts, the database and the Sentinel master's name stay: they are what one checks.
    expect(shown.tasks.store).toBe(`redis-sentinel://default:${MASK}@10.0.0.1:26379,10.0.0.2:26379/2#primary`);
    expect(shown.tasks.redisTls).toEqual({ key: MASK, ca: "/etc/gw/redis-ca.pem" });
    // A path to a key is not the key.
    expect(shown.server.internalTls).toEqual({
      cert: "/etc/gw/cert.pem",
      key: "/etc/gw/key.pem",
      ca: "/etc/gw/ca.pem",
    });
    expect(shown.eraBridge.requestStateSecret).toBe(MASK);
    // An OAuth client's secret and the grant vault's keys; the client id and endpoints stay.
    expect(shown.upstreams.crm.oauth).toMatchObject({
      clientId: "gw",
      clientSecret: MASK,
      issuer: "https://as.example.com",
    });
    expect(shown.auth.vault.keys).toEqual([MASK]);
    expect(r.out).not.toContain(VAULT_KEY);
    expect(shown.metrics.token).toBe(MASK);
    expect(shown.telemetry.endpoint).toBe(`https://otel:${MASK}@otel.example.com/`);
    // Defaults are filled in, and the federated endpoint is there.
    expect(shown.server.port).toBe(8642);
    expect(shown.federated).toEqual({ all: { upstreams: ["github", "files"] } });
  });

  it("--print-config=json prints the same, as JSON only", async () => {
    const yaml = await run(["--print-config", "--config", file, ...FLAGS], ENV);
    const json = await run(["--print-config=json", "--config", file, ...FLAGS], ENV);
    expect(json.code).toBe(EXIT_OK);
    expect(json.out).not.toContain("S3cr3t");
    expect(JSON.parse(json.out)).toEqual(parse(yaml.out));
  });

  it("with --check: the checks' problems exit 2, and on success only the config is printed", async () => {
    const ok = await run(["--check", "--print-config=json", "--upstream", "http://127.0.0.1:1/mcp"]);
    expect(ok.code).toBe(EXIT_OK);
    expect(JSON.parse(ok.out)).toMatchObject({ upstream: { url: "http://127.0.0.1:1/mcp" } });
    const bad = await run([
      "--check",
      "--print-config",
      "--upstream",
      "http://127.0.0.1:1/mcp",
      "--store",
      "redis://h/x",
    ]);
    expect(bad.code).toBe(EXIT_USAGE);
    expect(bad.out).toBe("");
  });

  it("an invalid config is refused as a start refuses it; an unknown format is a usage error", async () => {
    const bad = await run(["--print-config", "--upstream", "http://127.0.0.1:1/mcp", "--port", "99999"]);
    expect(bad.code).toBe(EXIT_USAGE);
    expect(bad.out).toBe("");
    expect(bad.err).toMatch(/server\.port: .*\(--port\)/);
    const xml = await run(["--print-config=xml", "--upstream", "http://127.0.0.1:1/mcp"]);
    expect(xml).toEqual({
      code: EXIT_USAGE,
      out: "",
      err: "mcp-task-gateway: --print-config=xml: the format must be yaml or json\nRun with --help for usage.\n",
    });
  });
});

describe("maskUrl", () => {
  it.each([
    ["https://mcp.example.com/mcp", "https://mcp.example.com/mcp"],
    ["https://u:p@h/x?a=1#f", `https://u:${MASK}@h/x?${MASK}#f`],
    ["redis://:p@127.0.0.1:6379/0", `redis://:${MASK}@127.0.0.1:6379/0`],
    ["https://tok@h/", `https://${MASK}@h/`],
    ["memory", "memory"],
    ["/etc/gw/key.pem", "/etc/gw/key.pem"],
  ])("%s → %s", (url, shown) => {
    expect(maskUrl(url)).toBe(shown);
  });
});

describe("SECRET_FIELDS covers the schema", () => {
  /** Every field path of the JSON schema, "*" for a record's or a list's entries. */
  function fieldPaths(schema: unknown, path: string[] = [], out: string[] = []): string[] {
    if (typeof schema !== "object" || schema === null) return out;
    const s = schema as Record<string, unknown>;
    for (const [key, value] of Object.entries((s.properties as Record<string, unknown> | undefined) ?? {})) {
      out.push([...path, key].join("."));
      fieldPaths(value, [...path, key], out);
    }
    if (typeof s.additionalProperties === "object") fieldPaths(s.additionalProperties, [...path, "*"], out);
    if (s.items !== undefined) fieldPaths(s.items, [...path, "*"], out);
    for (const k of ["anyOf", "oneOf", "allOf"])
      if (Array.isArray(s[k])) for (const sub of s[k] as unknown[]) fieldPaths(sub, path, out);
    return out;
  }

  // A field whose name looks like it holds a secret must be masked (SECRET_FIELDS) or be known not to hold one.
  const SECRET_LOOKING = /secret|token|pass|credential|key|header|env|cert|private|cookie/i;
  const NOT_SECRET: Record<string, string> = {
    "upstream.inheritEnv": "variable names only",
    "upstreams.*.inheritEnv": "variable names only",
    "upstream.headersTimeoutMs": "a duration",
    "upstreams.*.headersTimeoutMs": "a duration",
    "upstreams.*.auth.upstreamCredentials": "an enum: forward, drop or identity",
    "auth.upstreamCredentials": "an enum: forward, drop or identity",
    "auth.upstreamIdentityHeader": "a header name",
    "tasks.identityHeader": "a header name",
    "server.internalTls.cert": "a certificate file: public",
    "tasks.redisTls.cert": "a client certificate: public",
    "auth.jwt.jwks.keys": "public keys only (the schema refuses private ones)",
    "upstream.oauth.tokenUrl": "an endpoint URL (a password or query in it is masked as in any URL)",
    "upstream.oauth.privateKeyFile": "a file path: the key stays in the file",
    "upstream.oauth.privateKeyAlg": "an algorithm name",
    "upstream.oauth.keyId": "the key's public id (kid)",
    "upstream.oauth.actorToken": "an enum: none or clientCredentials",
    "upstream.oauth.subjectTokenType": "a token type URN",
    "upstream.oauth.maxCachedTokens": "a count",
    "upstreams.*.oauth.tokenUrl": "an endpoint URL (a password or query in it is masked as in any URL)",
    "upstreams.*.oauth.privateKeyFile": "a file path: the key stays in the file",
    "upstreams.*.oauth.privateKeyAlg": "an algorithm name",
    "upstreams.*.oauth.keyId": "the key's public id (kid)",
    "upstreams.*.oauth.actorToken": "an enum: none or clientCredentials",
    "upstreams.*.oauth.subjectTokenType": "a token type URN",
    "upstreams.*.oauth.maxCachedTokens": "a count",
  };

  it("every secret-looking field of the schema is masked or known not to be a secret", () => {
    const masked = new Set(SECRET_FIELDS.map(([path]) => path));
    const unclassified = fieldPaths(configJsonSchema()).filter(
      (path) =>
        SECRET_LOOKING.test(path.split(".").pop() ?? "") && !masked.has(path) && !Object.hasOwn(NOT_SECRET, path),
    );
    expect([...new Set(unclassified)]).toEqual([]);
  });
});
