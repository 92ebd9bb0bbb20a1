import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, parseConfig } from "../../src/config/validate.js";
import { createGateway } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { DEFAULT_PORT, type GatewayConfig } from "../../src/config/schema.js";
import {
  CONFIG_ENV,
  configFromEnv,
  configFromFlags,
  loadConfig,
  mergeConfigs,
  SETTINGS,
  type PartialConfig,
} from "../../src/config/load.js";
import { readConfigFile } from "../../src/config/config-file.js";
import { configJsonSchema, EXAMPLE_UPSTREAM, exampleConfig, toFileText } from "../../src/config/json-schema.js";

const UPSTREAM = "http://127.0.0.1:3001/mcp";
const ROOT = new URL("../../", import.meta.url);

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

async function asyncProblemsOf(p: Promise<unknown>): Promise<readonly string[]> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

/** Every leaf path of a plain object, e.g. "server.port". Arrays count as leaves. */
function leafPaths(value: unknown, prefix = ""): string[] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
}

describe("parseConfig", () => {
  it("fills every default from just an upstream URL", () => {
    const config = parseConfig({ upstream: { url: UPSTREAM } });
    expect(config).toEqual({
      upstream: {
        url: UPSTREAM,
        headers: {},
        connections: 0,
        http2: false,
        http2MaxStreams: 100,
        keepAliveTimeoutMs: 4_000,
        connectTimeoutMs: 10_000,
        headersTimeoutMs: 300_000,
        controlTimeoutMs: 10_000,
        era: "auto",
        idleTimeoutMs: 0,
        env: {},
        inheritEnv: ["PATH", "HOME"],
        maxProcesses: 32,
        warmProcesses: 0,
        processIdleMs: 300_000,
        spawnTimeoutMs: 60_000,
        stopTimeoutMs: 2_000,
        maxLineBytes: 8 * 1024 * 1024,
        replayBytes: 1024 * 1024,
      },
      server: {
        host: "127.0.0.1",
        port: DEFAULT_PORT,
        path: "/mcp",
        maxBodyBytes: 4 * 1024 * 1024,
        maxSessionsPerCaller: 1_000,
        sseKeepAliveMs: 15_000,
        allowedOrigins: [],
        allowLoopbackOrigins: true,
        shutdownGraceMs: 10_000,
        readyTimeoutMs: 2_000,
        workers: 1,
        internalHost: "127.0.0.1",
        internalPort: 0,
        internalInsecure: false,
      },
      eraBridge: {
        cacheTtlMs: 0,
        cacheScope: "private",
        sessionIdleMs: 300_000,
        sessionOpenTimeoutMs: 30_000,
        maxSessions: 1_000,
        inputRequestTtlMs: 300_000,
        maxPendingInputs: 10_000,
        maxPendingInputsPerCaller: 100,
        inputGatherMs: 50,
        maxInputRequestsPerRound: 16,
        toolSchemaTtlMs: 300_000,
        toolSchemaCacheBytes: 4 * 1024 * 1024,
      },
      tasks: {
        thresholdMs: 5_000,
        rules: [],
        defaultTtlMs: 3_600_000,
        maxTtlMs: 86_400_000,
        pollIntervalMs: 1_000,
        adaptive: true,
        minPollIntervalMs: 250,
        maxPollIntervalMs: 5_000,
        maxTasksPerCaller: 100,
        maxTasks: 10_000,
        maxResultBytes: 8 * 1024 * 1024,
        storeBytes: 256 * 1024 * 1024,
        store: "memory",
        redisWaitReplicas: 0,
        redisWaitTimeoutMs: 1_000,
        storePrefix: "mcp-gateway:",
        leaseMs: 15_000,
        sweepIntervalMs: 5_000,
        forwardTimeoutMs: 10_000,
        drainMs: 20_000,
      },
      log: { level: "info", access: false },
      telemetry: {},
      metrics: { enabled: true, status: "loopback", toolLabels: [] },
      access: { default: "allow", rules: [] },
      limits: { rules: [], onStoreDown: "allow" },
      upstreams: {},
      federated: {},
      federation: { listTimeoutMs: 5_000, breakerFailures: 3, breakerBackoffMs: 1_000, breakerMaxBackoffMs: 60_000 },
    } satisfies GatewayConfig);
    expect(DEFAULT_PORT).toBe(8642);
  });

  it("keeps given values and is idempotent on its own output", () => {
    const input = {
      upstream: { url: "https://mcp.example.com/mcp", connections: 4 },
      server: { port: 0, path: "/", allowedOrigins: ["https://app.example.com"] },
      log: { level: "debug" },
    };
    const config = parseConfig(input);
    expect(config.upstream?.connections).toBe(4);
    expect(config.server.port).toBe(0);
    expect(config.server.path).toBe("/");
    expect(config.server.allowedOrigins).toEqual(["https://app.example.com"]);
    expect(config.log.level).toBe("debug");
    expect(parseConfig(config)).toEqual(config);
  });

  it('reports a missing upstream as "upstream.url: is required"', () => {
    expect(problemsOf(() => parseConfig({}))).toEqual([
      "upstream.url: is required (or upstream.command, or upstreams)",
    ]);
    expect(problemsOf(() => parseConfig({ upstream: {} }))).toEqual([
      "upstream.url: is required (or upstream.command, for a stdio server)",
    ]);
    expect(problemsOf(() => parseConfig({ server: { port: 1 } }))).toEqual([
      "upstream.url: is required (or upstream.command, or upstreams)",
    ]);
  });

  it("throws a ConfigError with a stable code and every problem in its message", () => {
    let caught: unknown;
    try {
      parseConfig({ server: { port: -1 } });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const err = caught as ConfigError;
    expect(err.code).toBe("ERR_GATEWAY_CONFIG");
    expect(err.name).toBe("ConfigError");
    expect(err.problems.length).toBe(2);
    for (const p of err.problems) expect(err.message).toContain(p);
  });

  it.each([
    ["upstream.url", { upstream: { url: "ftp://example.com/mcp" } }],
    ["upstream.url", { upstream: { url: "not a url" } }],
    ["upstream.url", { upstream: { url: "/relative/mcp" } }],
    ["upstream.url", { upstream: { url: 42 } }],
    ["upstream.connections", { upstream: { url: UPSTREAM, connections: -1 } }],
    ["upstream.keepAliveTimeoutMs", { upstream: { url: UPSTREAM, keepAliveTimeoutMs: 0 } }],
    ["upstream.connectTimeoutMs", { upstream: { url: UPSTREAM, connectTimeoutMs: -1 } }],
    ["upstream.headersTimeoutMs", { upstream: { url: UPSTREAM, headersTimeoutMs: -5 } }],
    ["upstream.idleTimeoutMs", { upstream: { url: UPSTREAM, idleTimeoutMs: -1 } }],
    ["upstream.idleTimeoutMs", { upstream: { url: UPSTREAM, idleTimeoutMs: 1.5 } }],
    ["server.port", { upstream: { url: UPSTREAM }, server: { port: 65536 } }],
    ["server.port", { upstream: { url: UPSTREAM }, server: { port: -1 } }],
    ["server.port", { upstream: { url: UPSTREAM }, server: { port: 80.5 } }],
    ["server.port", { upstream: { url: UPSTREAM }, server: { port: "8080" } }],
    ["server.host", { upstream: { url: UPSTREAM }, server: { host: "" } }],
    ["server.path", { upstream: { url: UPSTREAM }, server: { path: "mcp" } }],
    ["server.path", { upstream: { url: UPSTREAM }, server: { path: "/mcp?x=1" } }],
    ["server.path", { upstream: { url: UPSTREAM }, server: { path: "/a b" } }],
    ["server.maxBodyBytes", { upstream: { url: UPSTREAM }, server: { maxBodyBytes: 0 } }],
    ["server.sseKeepAliveMs", { upstream: { url: UPSTREAM }, server: { sseKeepAliveMs: -1 } }],
    ["server.allowedOrigins", { upstream: { url: UPSTREAM }, server: { allowedOrigins: "https://a.example" } }],
    ["server.allowLoopbackOrigins", { upstream: { url: UPSTREAM }, server: { allowLoopbackOrigins: "yes" } }],
    ["server.shutdownGraceMs", { upstream: { url: UPSTREAM }, server: { shutdownGraceMs: -1 } }],
    ["server.readyTimeoutMs", { upstream: { url: UPSTREAM }, server: { readyTimeoutMs: 0 } }],
    ["tasks.thresholdMs", { upstream: { url: UPSTREAM }, tasks: { thresholdMs: -1 } }],
    ["log.level", { upstream: { url: UPSTREAM }, log: { level: "verbose" } }],
  ])("names the field %s when it is invalid", (field, input) => {
    const problems = problemsOf(() => parseConfig(input));
    expect(problems).toHaveLength(1);
    expect(problems[0]?.startsWith(`${field}: `)).toBe(true);
  });

  it("explains what is wrong, not only where", () => {
    const [url] = problemsOf(() => parseConfig({ upstream: { url: "ftp://x" } }));
    expect(url).toBe("upstream.url: must be an absolute http:// or https:// URL");
    const [port] = problemsOf(() => parseConfig({ upstream: { url: UPSTREAM }, server: { port: 70000 } }));
    expect(port).toMatch(/^server\.port: .*65535/);
    const [level] = problemsOf(() => parseConfig({ upstream: { url: UPSTREAM }, log: { level: "loud" } }));
    for (const l of ["silent", "error", "warn", "info", "debug"]) expect(level).toContain(l);
  });

  it("names unknown keys at the root and in each section", () => {
    const problems = problemsOf(() =>
      parseConfig({
        upstream: { url: UPSTREAM, retries: 3 },
        server: { prot: 8080 },
        tasks: { threshold: 1 },
        log: { format: "json" },
        extra: true,
      }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'upstream: unknown field(s) "retries"',
        'server: unknown field(s) "prot" (did you mean "port"?)',
        'tasks: unknown field(s) "threshold" (did you mean "thresholdMs"?)',
        'log: unknown field(s) "format"',
        'unknown field(s) "extra"',
      ]),
    );
    expect(problems).toHaveLength(5);
  });

  it("reports every bad field at once", () => {
    const problems = problemsOf(() =>
      parseConfig({ upstream: { url: "nope" }, server: { port: 1e6, path: "x" }, log: { level: 3 } }),
    );
    expect(problems.map((p) => p.split(":")[0]).sort()).toEqual([
      "log.level",
      "server.path",
      "server.port",
      "upstream.url",
    ]);
  });

  it("rejects a config that is not an object", () => {
    for (const input of [null, 42, "x", []]) {
      const problems = problemsOf(() => parseConfig(input));
      expect(problems.length).toBeGreaterThan(0);
    }
  });

  it("accepts a $schema pointer", () => {
    expect(parseConfig({ $schema: "./config/gateway.schema.json", upstream: { url: UPSTREAM } }).$schema).toBe(
      "./config/gateway.schema.json",
    );
  });
});

describe("configFromEnv / configFromFlags", () => {
  it("maps every setting to its path, coercing integers", () => {
    const env: NodeJS.ProcessEnv = {
      MCP_GATEWAY_UPSTREAM: UPSTREAM,
      MCP_GATEWAY_HOST: "0.0.0.0",
      MCP_GATEWAY_PORT: "9000",
      MCP_GATEWAY_PATH: "/gw",
      MCP_GATEWAY_THRESHOLD_MS: " 250 ",
      MCP_GATEWAY_LOG_LEVEL: "warn",
      UNRELATED: "x",
    };
    expect(configFromEnv(env)).toEqual({
      upstream: { url: UPSTREAM },
      server: { host: "0.0.0.0", port: 9000, path: "/gw" },
      tasks: { thresholdMs: 250 },
      log: { level: "warn" },
    });
    expect(
      configFromFlags({
        upstream: UPSTREAM,
        host: "::1",
        port: "0",
        path: "/",
        "threshold-ms": "-1",
        "log-level": "debug",
      }),
    ).toEqual({
      upstream: { url: UPSTREAM },
      server: { host: "::1", port: 0, path: "/" },
      tasks: { thresholdMs: -1 },
      log: { level: "debug" },
    });
  });

  it("leaves non-integers as strings so the schema names the field", () => {
    for (const bad of ["abc", "80.5", "1e3", "0x50", "8080abc"]) {
      const partial = configFromFlags({ port: bad });
      expect(partial).toEqual({ server: { port: bad } });
      const problems = problemsOf(() => parseConfig(mergeConfigs({ upstream: { url: UPSTREAM } }, partial)));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^server\.port: /);
    }
  });

  it("ignores unset and empty values", () => {
    expect(configFromEnv({ MCP_GATEWAY_PORT: "", MCP_GATEWAY_HOST: undefined })).toEqual({});
    expect(configFromFlags({ port: undefined, host: "" })).toEqual({});
  });

  it("has one flag and one env name per setting, all distinct", () => {
    const flags = SETTINGS.map((s) => s.flag);
    const envs = SETTINGS.map((s) => s.env);
    expect(new Set(flags).size).toBe(flags.length);
    expect(new Set(envs).size).toBe(envs.length);
    expect(flags).toEqual(expect.arrayContaining(["upstream", "host", "port", "path", "threshold-ms", "log-level"]));
    for (const env of envs) expect(env).toMatch(/^MCP_GATEWAY_[A-Z_]+$/);
    // Every setting lands on a real config field.
    const defaults = parseConfig({ upstream: { url: UPSTREAM } }) as unknown as Record<string, Record<string, unknown>>;
    const stdio = parseConfig({ upstream: { command: ["node"] } }) as unknown as Record<
      string,
      Record<string, unknown>
    >;
    // Optional fields without a default (metrics.port, metrics.token) exist once set.
    const optional = parseConfig({
      upstream: { url: UPSTREAM },
      metrics: { port: 0, token: "t".repeat(16) },
    }) as unknown as Record<string, Record<string, unknown>>;
    for (const s of SETTINGS)
      expect({ ...stdio[s.path[0]], ...optional[s.path[0]], ...defaults[s.path[0]] }).toHaveProperty(s.path[1]);
  });
});

describe("mergeConfigs", () => {
  it("lets later sources win, merging nested objects", () => {
    const merged = mergeConfigs(
      { upstream: { url: "http://a/mcp", connections: 2 }, server: { port: 1, host: "h" } },
      { server: { port: 2 } },
      { server: { path: "/p" }, log: { level: "debug" } },
    );
    expect(merged).toEqual({
      upstream: { url: "http://a/mcp", connections: 2 },
      server: { port: 2, host: "h", path: "/p" },
      log: { level: "debug" },
    });
  });

  it("replaces arrays and scalars instead of merging them", () => {
    expect(
      mergeConfigs(
        { server: { allowedOrigins: ["https://a", "https://b"] } },
        { server: { allowedOrigins: ["https://c"] } },
      ),
    ).toEqual({ server: { allowedOrigins: ["https://c"] } });
    expect(mergeConfigs({ server: { port: 1 } }, { server: "oops" })).toEqual({ server: "oops" });
    expect(mergeConfigs({ server: "oops" }, { server: { port: 1 } })).toEqual({ server: { port: 1 } });
  });

  it("does not mutate its inputs", () => {
    const a: PartialConfig = { server: { port: 1 } };
    const b: PartialConfig = { server: { host: "x" } };
    const c: PartialConfig = { server: { path: "/c" } };
    const snapshot = JSON.stringify([a, b, c]);
    mergeConfigs(a, b, c);
    mergeConfigs({}, b, c);
    expect(JSON.stringify([a, b, c])).toBe(snapshot);
  });

  it("returns an empty object for no sources", () => {
    expect(mergeConfigs()).toEqual({});
    expect(mergeConfigs({}, {})).toEqual({});
  });
});

describe("config files and loadConfig", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mcp-gw-config-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function writeJson(name: string, value: unknown): Promise<string> {
    const file = join(dir, name);
    await writeFile(file, typeof value === "string" ? value : JSON.stringify(value));
    return file;
  }

  it.each([
    [
      "precedence.json",
      JSON.stringify({
        upstream: { url: "http://file.example/mcp" },
        server: { port: 2222, path: "/from-file" },
        log: { level: "warn" },
      }),
    ],
    [
      "precedence.yaml",
      "upstream:\n  url: http://file.example/mcp\nserver:\n  port: 2222\n  path: /from-file\nlog:\n  level: warn\n",
    ],
  ])("applies precedence flags > file > env, field by field (%s)", async (name, text) => {
    const file = await writeJson(name, text);
    const env: NodeJS.ProcessEnv = {
      MCP_GATEWAY_UPSTREAM: "http://env.example/mcp",
      MCP_GATEWAY_PORT: "1111",
      MCP_GATEWAY_HOST: "0.0.0.0",
      MCP_GATEWAY_LOG_LEVEL: "error",
    };
    const all = await loadConfig({ flags: { port: "3333", "log-level": "debug" }, env, configFile: file });
    expect(all.server.port).toBe(3333); // flag
    expect(all.log.level).toBe("debug"); // flag
    expect(all.server.path).toBe("/from-file"); // file
    expect(all.upstream?.url).toBe("http://file.example/mcp"); // file beats env
    expect(all.server.host).toBe("0.0.0.0"); // env, nothing above it

    const noFlags = await loadConfig({ flags: {}, env, configFile: file });
    expect(noFlags.server.port).toBe(2222);
    expect(noFlags.log.level).toBe("warn");

    const envOnly = await loadConfig({ flags: {}, env });
    expect(envOnly.server.port).toBe(1111);
    expect(envOnly.upstream?.url).toBe("http://env.example/mcp");
    expect(envOnly.log.level).toBe("error");
  });

  it(`reads the file named by ${CONFIG_ENV} when no --config is given, and --config wins over it`, async () => {
    const fromEnvFile = await writeJson("env-named.json", { upstream: { url: "http://env-file.example/mcp" } });
    const fromFlagFile = await writeJson("flag-named.json", { upstream: { url: "http://flag-file.example/mcp" } });
    const env: NodeJS.ProcessEnv = { [CONFIG_ENV]: fromEnvFile };
    expect((await loadConfig({ flags: {}, env })).upstream?.url).toBe("http://env-file.example/mcp");
    expect((await loadConfig({ flags: {}, env, configFile: fromFlagFile })).upstream?.url).toBe(
      "http://flag-file.example/mcp",
    );
  });

  it("coerces integer flags and env values, and names the field when they are not integers", async () => {
    const config = await loadConfig({
      flags: { upstream: UPSTREAM, "threshold-ms": "0" },
      env: { MCP_GATEWAY_PORT: "0" },
    });
    expect(config.server.port).toBe(0);
    expect(config.tasks.thresholdMs).toBe(0);

    const problems = await asyncProblemsOf(loadConfig({ flags: { upstream: UPSTREAM, port: "eighty" }, env: {} }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^server\.port: /);
  });

  it("validates the merged result, so a file value overridden by a flag is not reported", async () => {
    const file = await writeJson("overridden.json", { upstream: { url: UPSTREAM }, server: { port: 99999 } });
    const config = await loadConfig({ flags: { port: "0" }, env: {}, configFile: file });
    expect(config.server.port).toBe(0);
  });

  it("reports unknown keys and bad values found in the file", async () => {
    const file = await writeJson("bad-values.json", { upstream: { url: UPSTREAM }, server: { prot: 1, port: -1 } });
    const problems = await asyncProblemsOf(loadConfig({ flags: {}, env: {}, configFile: file }));
    expect(problems).toEqual(expect.arrayContaining(['server: unknown field(s) "prot" (did you mean "port"?)']));
    expect(problems.some((p) => p.startsWith("server.port: "))).toBe(true);
  });

  it("a file that is not valid JSON gives a ConfigError naming the file", async () => {
    const file = await writeJson("broken.json", '{ "upstream": { "url": ');
    const problems = await asyncProblemsOf(readConfigFile(file));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(file);
    expect(problems[0]).toContain("not valid JSON");
    await expect(loadConfig({ flags: {}, env: {}, configFile: file })).rejects.toBeInstanceOf(ConfigError);
  });

  it("a file that cannot be read gives a ConfigError naming the file and the reason", async () => {
    const missing = join(dir, "does-not-exist.json");
    const problems = await asyncProblemsOf(readConfigFile(missing));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(missing);
    expect(problems[0]).toContain("ENOENT");

    const directory = join(dir, "a-directory.json");
    await mkdir(directory);
    const dirProblems = await asyncProblemsOf(readConfigFile(directory));
    expect(dirProblems[0]).toContain(directory);
    expect(dirProblems[0]).toContain("cannot be read");
  });

  it("a file whose JSON is not an object gives a ConfigError naming the file", async () => {
    for (const [name, text] of [
      ["array.json", "[1,2]"],
      ["null.json", "null"],
      ["number.json", "8642"],
    ] as const) {
      const file = await writeJson(name, text);
      const problems = await asyncProblemsOf(readConfigFile(file));
      expect(problems[0]).toContain(file);
      expect(problems[0]).toContain("must contain a JSON object");
    }
  });
});

describe("committed artifacts (drift check)", () => {
  const REGEN = "out of date with src/config/schema.ts: run `npm run schema` and commit the result";

  it("config/gateway.schema.json equals what the zod schema produces", async () => {
    const onDisk = await readFile(new URL("config/gateway.schema.json", ROOT), "utf8");
    expect(onDisk, `config/gateway.schema.json is ${REGEN}`).toBe(toFileText(configJsonSchema()));
  });

  it("gateway.config.example.json equals what the zod schema produces", async () => {
    const onDisk = await readFile(new URL("gateway.config.example.json", ROOT), "utf8");
    expect(onDisk, `gateway.config.example.json is ${REGEN}`).toBe(toFileText(exampleConfig()));
  });

  it("the example points at the schema, parses, and shows every field with its default", async () => {
    const example = JSON.parse(await readFile(new URL("gateway.config.example.json", ROOT), "utf8")) as Record<
      string,
      unknown
    >;
    expect(example.$schema).toBe("./config/gateway.schema.json");
    const parsed = parseConfig(example);
    expect(parsed).toEqual(example);

    const { $schema: _s, ...fields } = example;
    const { $schema: _d, ...defaults } = parseConfig({ upstream: { url: EXAMPLE_UPSTREAM } });
    expect(leafPaths(fields).sort()).toEqual(leafPaths(defaults).sort());
    expect(fields).toEqual(defaults);
  });

  it("the JSON schema describes every config field and requires only upstream.url or upstream.command", () => {
    const schema = configJsonSchema() as {
      required: string[];
      properties: Record<string, { properties?: Record<string, unknown>; required?: string[]; oneOf?: unknown }>;
    };
    expect(schema.required).toBeUndefined();
    expect((schema as { anyOf?: unknown }).anyOf).toEqual([
      { required: ["upstream"] },
      { required: ["upstreams"], properties: { upstreams: { minProperties: 1 } } },
    ]);
    expect(schema.properties.upstream?.required).toBeUndefined();
    expect(schema.properties.upstream?.oneOf).toEqual([{ required: ["url"] }, { required: ["command"] }]);
    const defaults = parseConfig({ upstream: { url: EXAMPLE_UPSTREAM } }) as unknown as Record<string, object>;
    for (const [section, values] of Object.entries(defaults)) {
      if (section === "$schema") continue;
      const described = Object.keys(schema.properties[section]?.properties ?? {});
      // Every defaulted field is described; the only others are optional fields without a default.
      expect(described, section).toEqual(expect.arrayContaining(Object.keys(values)));
      for (const extra of described.filter((k) => !(k in values))) {
        expect(schema.properties[section]?.required ?? [], `${section}.${extra}`).not.toContain(extra);
      }
    }
  });
});

describe("upstream.command", () => {
  it("takes empty arguments (a shell's '') but not an empty program", () => {
    expect(parseConfig({ upstream: { command: ["mcp-server", "--prefix", ""] } }).upstream?.command).toEqual([
      "mcp-server",
      "--prefix",
      "",
    ]);
    expect(() => parseConfig({ upstream: { command: ["", "x"] } })).toThrow(
      /upstream\.command: the program \(the first element\) must not be empty/,
    );
  });
});

describe("upstream TLS and HTTP/2 (upstream.http2, http2MaxStreams, caFile)", () => {
  const HTTPS = "https://mcp.example.com/mcp";

  it("is off by default, with 100 streams per h2 connection and no extra CA", () => {
    const { upstream } = parseConfig({ upstream: { url: HTTPS } });
    expect(upstream?.http2).toBe(false);
    expect(upstream?.http2MaxStreams).toBe(100);
    expect(upstream?.caFile).toBeUndefined();
  });

  it("keeps the values given for an https:// upstream (any case of the scheme)", () => {
    const { upstream } = parseConfig({
      upstream: {
        url: "HTTPS://mcp.example.com/mcp",
        http2: true,
        http2MaxStreams: 250,
        caFile: "/etc/ssl/private-ca.pem",
      },
    });
    expect(upstream).toMatchObject({ http2: true, http2MaxStreams: 250, caFile: "/etc/ssl/private-ca.pem" });
  });

  it("refuses http2 and caFile on an http:// or stdio upstream, where they would be ignored", () => {
    expect(problemsOf(() => parseConfig({ upstream: { url: UPSTREAM, http2: true } }))).toEqual([
      "upstream.http2: needs an https:// upstream.url: HTTP/2 is negotiated in the TLS handshake (ALPN)",
    ]);
    expect(problemsOf(() => parseConfig({ upstream: { url: UPSTREAM, caFile: "/ca.pem" } }))).toEqual([
      "upstream.caFile: needs an https:// upstream.url",
    ]);
    expect(problemsOf(() => parseConfig({ upstream: { command: ["mcp-server"], http2: true } }))).toEqual([
      "upstream.http2: needs an https:// upstream.url: HTTP/2 is negotiated in the TLS handshake (ALPN)",
    ]);
    // false is the default and says nothing: allowed anywhere.
    expect(parseConfig({ upstream: { url: UPSTREAM, http2: false } }).upstream?.http2).toBe(false);
  });

  it("names the field for bad values", () => {
    expect(problemsOf(() => parseConfig({ upstream: { url: HTTPS, http2: "yes" } }))[0]).toMatch(/^upstream\.http2: /);
    expect(problemsOf(() => parseConfig({ upstream: { url: HTTPS, http2MaxStreams: 0 } }))[0]).toMatch(
      /^upstream\.http2MaxStreams: /,
    );
    expect(problemsOf(() => parseConfig({ upstream: { url: HTTPS, http2MaxStreams: 1.5 } }))[0]).toMatch(
      /^upstream\.http2MaxStreams: /,
    );
    expect(problemsOf(() => parseConfig({ upstream: { url: HTTPS, caFile: "" } }))[0]).toMatch(/^upstream\.caFile: /);
  });

  it("describes each in the JSON schema, NODE_EXTRA_CA_CERTS included", () => {
    const upstream = (
      configJsonSchema() as {
        properties: { upstream: { properties: Record<string, { description?: string; default?: unknown }> } };
      }
    ).properties.upstream.properties;
    expect(upstream.http2?.default).toBe(false);
    expect(upstream.http2MaxStreams?.default).toBe(100);
    expect(upstream.caFile?.description).toContain("NODE_EXTRA_CA_CERTS");
    expect(upstream.http2?.description).toContain("allowH2");
  });
});

describe("eraBridge, formerly modern", () => {
  it("reads the old section name as the new one", () => {
    const config = parseConfig({ upstream: { url: "http://127.0.0.1:9/mcp" }, modern: { inputGatherMs: 7 } });
    expect(config.eraBridge.inputGatherMs).toBe(7);
    expect(config).not.toHaveProperty("modern");
  });

  it("refuses both names at once, naming the field", () => {
    expect(() => parseConfig({ upstream: { url: "http://127.0.0.1:9/mcp" }, modern: {}, eraBridge: {} })).toThrowError(
      /modern: renamed to eraBridge; give only eraBridge/,
    );
  });

  it("validates the old name's fields, naming them as the input wrote them", () => {
    const problemsOf = (input: unknown): readonly string[] => {
      try {
        parseConfig(input);
      } catch (err) {
        if (err instanceof ConfigError) return err.problems;
      }
      return [];
    };
    const url = "http://127.0.0.1:9/mcp";
    expect(problemsOf({ upstream: { url }, modern: { maxSessions: 0 } })).toEqual([
      expect.stringMatching(/^modern\.maxSessions: /),
    ]);
    expect(problemsOf({ upstream: { url }, modern: { sesionIdleMs: 1 } })).toEqual([
      'modern: unknown field(s) "sesionIdleMs" (did you mean "sessionIdleMs"?)',
    ]);
    expect(problemsOf({ upstream: { url }, eraBridge: { maxSessions: 0 } })).toEqual([
      expect.stringMatching(/^eraBridge\.maxSessions: /),
    ]);
  });

  it("warns once per process, when the gateway has its logger", async () => {
    const lines: string[] = [];
    const log = createLogger("warn", (line) => lines.push(line));
    const config = { upstream: { url: "http://127.0.0.1:9/mcp" }, modern: { sessionIdleMs: 1_000 } };
    const first = createGateway(config, { logger: log });
    const second = createGateway(config, { logger: log });
    const warnings = lines.map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(warnings.filter((w) => w.msg.includes('"modern" is now "eraBridge"'))).toEqual([
      expect.objectContaining({ level: "warn" }),
    ]);
    expect(first.config.eraBridge.sessionIdleMs).toBe(1_000);
    await Promise.all([first.shutdown(0), second.shutdown(0)]);
  });
});

describe("upstreams: named upstreams beside the single one", () => {
  const GITHUB = "https://api.example.com/mcp";
  const AUTH = { jwt: { jwksUrl: "https://issuer.example/jwks", issuer: "https://issuer.example", audience: "gw" } };

  it("takes named upstreams alone or beside the single one, each filled in like the single one", () => {
    const alone = parseConfig({ upstreams: { github: { url: GITHUB }, files: { command: ["node", "server.js"] } } });
    expect(alone.upstream).toBeUndefined();
    expect(alone.upstreams.github).toMatchObject({ url: GITHUB, headers: {}, connections: 0, era: "auto" });
    expect(alone.upstreams.files).toMatchObject({ command: ["node", "server.js"], inheritEnv: ["PATH", "HOME"] });
    const both = parseConfig({ upstream: { url: UPSTREAM }, upstreams: { github: { url: GITHUB } } });
    expect(both.upstream?.url).toBe(UPSTREAM);
    expect(Object.keys(both.upstreams)).toEqual(["github"]);
  });

  it.each([["Bad_Name"], ["-dash"], ["_under"], ["with space"], ["a".repeat(33)], ["ü"]])(
    "refuses the name %j, naming upstreams.<name>",
    (name) => {
      expect(problemsOf(() => parseConfig({ upstreams: { [name]: { url: GITHUB } } }))).toEqual([
        `upstreams.${name}: the name must match ^[a-z0-9][a-z0-9_-]{0,31}$ (lowercase letters, digits, _ and -, at most 32)`,
      ]);
    },
  );

  it("takes names of up to 32 lowercase letters, digits, _ and -", () => {
    const names = ["a", "0", "git-hub_2", "a".repeat(32)];
    const config = parseConfig({ upstreams: Object.fromEntries(names.map((n) => [n, { url: GITHUB }])) });
    // Sorted: an object lists integer-like keys ("0") first, whatever the file's order.
    expect(Object.keys(config.upstreams).sort()).toEqual([...names].sort());
  });

  it("refuses upstreams.default beside the single upstream, which is called default; alone it is a name like any", () => {
    expect(
      problemsOf(() => parseConfig({ upstream: { url: UPSTREAM }, upstreams: { default: { url: GITHUB } } })),
    ).toEqual(["upstreams.default: clashes with the single upstream, which is called default; rename one"]);
    expect(parseConfig({ upstreams: { default: { url: GITHUB } } }).upstreams.default?.url).toBe(GITHUB);
  });

  it("refuses a rule whose upstream glob matches no upstream, naming the rule and the names there are", () => {
    const upstreams = { files: { command: ["node", "server.js"] }, docs: { url: GITHUB } };
    expect(
      problemsOf(() =>
        parseConfig({
          upstream: { url: UPSTREAM },
          upstreams,
          tasks: { rules: [{ tool: "*", mode: "always", upstream: "gh*" }] },
          access: {
            rules: [
              { tools: "*", effect: "allow", upstream: "doc?" },
              { tools: "*", effect: "deny", upstream: "github" },
            ],
          },
        }),
      ),
    ).toEqual([
      "tasks.rules.0.upstream: matches no configured upstream (default, files, docs)",
      "access.rules.1.upstream: matches no configured upstream (default, files, docs)",
    ]);
    // The same globs, once an upstream they match exists; default names the single upstream.
    const config = parseConfig({
      upstream: { url: UPSTREAM },
      upstreams: { ...upstreams, ghe: { url: GITHUB } },
      tasks: { rules: [{ tool: "*", mode: "always", upstream: "gh*" }] },
      access: { rules: [{ tools: "*", effect: "deny", upstream: "default" }] },
    });
    expect(config.tasks.rules[0]?.upstream).toBe("gh*");
  });

  it("refuses static headers on a stdio upstream, which takes env instead", () => {
    const headers = { "x-api-key": "k" };
    expect(problemsOf(() => parseConfig({ upstream: { command: ["node", "s.js"], headers } }))).toEqual([
      "upstream.headers: needs an HTTP upstream (url); a stdio server takes env",
    ]);
    expect(problemsOf(() => parseConfig({ upstreams: { files: { command: ["node", "s.js"], headers } } }))).toEqual([
      "upstreams.files.headers: needs an HTTP upstream (url); a stdio server takes env",
    ]);
    // An empty block says nothing, and an HTTP upstream takes them.
    expect(parseConfig({ upstream: { command: ["node"], headers: {} } }).upstream?.headers).toEqual({});
    expect(parseConfig({ upstreams: { github: { url: GITHUB, headers } } }).upstreams.github?.headers).toEqual(headers);
  });

  it.each([["content-type"], ["Content-Type"], ["mcp-session-id"], ["MCP-Protocol-Version"], ["host"]])(
    "refuses the header %s, which the gateway or the MCP transport sets",
    (name) => {
      expect(
        problemsOf(() => parseConfig({ upstreams: { github: { url: GITHUB, headers: { [name]: "x" } } } })),
      ).toEqual([`upstreams.github.headers.${name}: is set by the gateway or the MCP transport`]);
      expect(problemsOf(() => parseConfig({ upstream: { url: GITHUB, headers: { [name]: "x" } } }))).toEqual([
        `upstream.headers.${name}: is set by the gateway or the MCP transport`,
      ]);
    },
  );

  it("names a header whose value has a line break, never the value", () => {
    const problems = problemsOf(() =>
      parseConfig({ upstreams: { github: { url: GITHUB, headers: { authorization: "Bearer tok-SECRET\r\nx: y" } } } }),
    );
    expect(problems).toEqual(["upstreams.github.headers.authorization: must not contain control characters (CR, LF)"]);
    expect(problems.join("\n")).not.toContain("tok-SECRET");
  });

  it("refuses identity credentials for an upstream when no auth verifies a token to take the identity from", () => {
    const upstreams = { github: { url: GITHUB, auth: { upstreamCredentials: "identity" } } };
    expect(problemsOf(() => parseConfig({ upstreams }))).toEqual([
      "upstreams.github.auth.upstreamCredentials: identity needs auth (a verified token to take the identity from)",
    ]);
    expect(parseConfig({ upstreams, auth: AUTH }).upstreams.github?.auth?.upstreamCredentials).toBe("identity");
  });

  it("refuses forward for an upstream that sets its own authorization header: one of the two would be lost", () => {
    const github = (credentials: string) => ({
      url: GITHUB,
      headers: { Authorization: "Bearer own" },
      auth: { upstreamCredentials: credentials },
    });
    expect(problemsOf(() => parseConfig({ upstreams: { github: github("forward") } }))).toEqual([
      "upstreams.github.auth.upstreamCredentials: forward sends the client's token, but headers sets this upstream's own authorization; choose one",
    ]);
    expect(parseConfig({ upstreams: { github: github("drop") } }).upstreams.github?.headers).toEqual({
      Authorization: "Bearer own",
    });
  });

  it("with no upstream at all, names upstream.url and says upstreams would do too, whatever else is wrong", () => {
    const missing = "upstream.url: is required (or upstream.command, or upstreams)";
    expect(problemsOf(() => parseConfig({}))).toEqual([missing]);
    expect(problemsOf(() => parseConfig({ upstreams: {} }))).toEqual([missing]);
    expect(problemsOf(() => parseConfig({ server: { port: "80" } }))).toEqual([
      "server.port: Invalid input: expected number, received string",
      missing,
    ]);
  });
});

describe("configFromFlags: --upstream NAME=URL and --upstream-command NAME=…", () => {
  const GITHUB = "https://api.example.com/mcp";

  it("a NAME= value adds a named upstream; one plain value is still the single upstream", () => {
    expect(
      configFromFlags({
        upstream: [UPSTREAM, `github=${GITHUB}`],
        "upstream-command": ["files=npx -y '@scope/server files' /srv"],
      }),
    ).toEqual({
      upstream: { url: UPSTREAM },
      upstreams: {
        github: { url: GITHUB },
        files: { command: ["npx", "-y", "@scope/server files", "/srv"] },
      },
    });
    expect(configFromFlags({ upstream: UPSTREAM })).toEqual({ upstream: { url: UPSTREAM } });
    expect(configFromFlags({ upstream: [UPSTREAM] })).toEqual({ upstream: { url: UPSTREAM } });
  });

  it("repeats: every named value adds its upstream, in order", () => {
    const partial = configFromFlags({ upstream: ["a=http://127.0.0.1:1/mcp", "b-2=http://127.0.0.1:2/mcp"] });
    expect(partial).toEqual({
      upstreams: { a: { url: "http://127.0.0.1:1/mcp" }, "b-2": { url: "http://127.0.0.1:2/mcp" } },
    });
    expect(Object.keys(parseConfig(partial).upstreams)).toEqual(["a", "b-2"]);
  });

  it("reads a URL whose query has = as plain, and a --upstream-command whose = is in an argument as plain", () => {
    expect(configFromFlags({ upstream: ["http://127.0.0.1:1/mcp?tenant=a"] })).toEqual({
      upstream: { url: "http://127.0.0.1:1/mcp?tenant=a" },
    });
    expect(configFromFlags({ "upstream-command": ["node server.js --mode=fast"] })).toEqual({
      upstream: { command: ["node", "server.js", "--mode=fast"] },
    });
  });

  it.each([
    ["upstream", [UPSTREAM, "http://127.0.0.1:2/mcp"], "upstream.url", "--upstream NAME=URL"],
    ["upstream-command", ["node a.js", "node b.js"], "upstream.command", '--upstream-command NAME="CMD ARG…"'],
  ])("two plain --%s values are a usage error naming %s", (flag, values, field, hint) => {
    const problems = problemsOf(() => configFromFlags({ [flag]: values }));
    expect(problems).toEqual([
      `${field}: --${flag} is given 2 times without a name, but only one upstream is unnamed (served at server.path); name the others: ${hint}`,
    ]);
  });

  it("the same name twice is a usage error naming the upstream", () => {
    expect(problemsOf(() => configFromFlags({ upstream: [`gh=${GITHUB}`, "gh=http://127.0.0.1:2/mcp"] }))).toEqual([
      "upstreams.gh.url: --upstream gh=… is given more than once",
    ]);
  });

  it("a name the schema refuses is named as such, and a command that cannot be split names its upstream", () => {
    expect(problemsOf(() => configFromFlags({ upstream: [`Bad_Name=${GITHUB}`] }))).toEqual([
      "upstreams.Bad_Name: the name must match ^[a-z0-9][a-z0-9_-]{0,31}$ (--upstream)",
    ]);
    expect(problemsOf(() => configFromFlags({ "upstream-command": ["files=node 'oops"] }))).toEqual([
      "upstreams.files.command: unclosed single quote at character 6",
    ]);
  });

  it("MCP_GATEWAY_UPSTREAM and MCP_GATEWAY_UPSTREAM_COMMAND stay one plain value each", () => {
    expect(
      configFromEnv({ MCP_GATEWAY_UPSTREAM: `github=${GITHUB}`, MCP_GATEWAY_UPSTREAM_COMMAND: "files=node s.js" }),
    ).toEqual({ upstream: { url: `github=${GITHUB}`, command: ["files=node", "s.js"] } });
  });

  it("a named flag replaces the url or command the config file gives that name, keeping the rest of its block", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mcp-gw-named-"));
    try {
      const file = join(dir, "gateway.json");
      await writeFile(
        file,
        JSON.stringify({
          upstream: { url: UPSTREAM },
          upstreams: {
            github: { command: ["github-mcp", "stdio"], connections: 3 },
            files: { url: "http://127.0.0.1:4/mcp", connectTimeoutMs: 1_234 },
            docs: { url: "http://127.0.0.1:5/mcp" },
          },
        }),
      );
      const config = await loadConfig({
        flags: { upstream: [`github=${GITHUB}`], "upstream-command": ["files=node files.js"] },
        env: {},
        configFile: file,
      });
      expect(config.upstream?.url).toBe(UPSTREAM);
      expect(config.upstreams.github).toMatchObject({ url: GITHUB, connections: 3 });
      expect(config.upstreams.github?.command).toBeUndefined();
      expect(config.upstreams.files).toMatchObject({ command: ["node", "files.js"], connectTimeoutMs: 1_234 });
      expect(config.upstreams.files?.url).toBeUndefined();
      expect(config.upstreams.docs?.url).toBe("http://127.0.0.1:5/mcp");
      // A name the file does not have is added beside its upstreams.
      const added = await loadConfig({ flags: { upstream: [`new=${GITHUB}`] }, env: {}, configFile: file });
      expect(Object.keys(added.upstreams)).toEqual(["github", "files", "docs", "new"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
