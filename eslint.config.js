// ESLint is here for bugs and structure, not style (Prettier formats): typescript-eslint's
// type-checked rules catch promises left floating or passed where nothing awaits them, and
// unused code; import-x enforces the one-way layering of the folders under src/ and forbids
// import cycles (scripts/import-cycles.ts also those that type-only imports close); no-restricted-syntax
// keeps the OpenTelemetry SDK in src/telemetry/sdk.ts and the gateway's JSON-RPC errors in
// src/protocol/errors.ts. `npm run lint` (and so `npm test`) runs it.
//
// Layering: LAYERS below gives, for each folder under src/, the other folders it may import from
// (docs/architecture.md draws the same graph). endpoints/ is the top: the kinds of endpoint, each a configuration
// of the request pipeline (server/). server/ is the only layer that may use hono (besides the composition root);
// protocol/ is pure wire knowledge (no network or storage I/O).
//
// The files directly in src/ (src/index.ts, cli.ts, main.ts, check-config.ts, …) are in no layer and
// may import anything. Lists are allow-lists: a folder that is not on a layer's list (including one
// that does not exist yet, or the src/*.ts files) is off limits to that layer.
// To place a new folder, add it to LAYERS and to the lists of the layers above it; a pure folder that every layer
// may import (config/ and protocol/ included) goes in BASE instead.
//
// src/gateway/ is the composition root: it builds the gateway from every layer, so it may
// import all of them (it is not in LAYERS, so it gets no zone) and hono. No layer lists it,
// and compositionRootZone keeps every other file under src/ but the entry points
// src/index.ts, src/cli.ts and src/main.ts from importing it.
//
// unrs-resolver (the native resolver under eslint-plugin-import-x and
// eslint-import-resolver-typescript) is pinned to 1.12.2 in devDependencies: the
// registry here serves 1.13.0's binding only for Linux, so a lockfile made with 1.13.0
// lacks the other platforms' optional bindings and `npm ci` refuses it. Its postinstall
// is only a fallback download for a missing binding; npm installs the binding itself.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";

const root = path.dirname(fileURLToPath(import.meta.url));

/** What calls/ and every layer that drives calls (the bridges, tasks-2025/, modern-upstream/) may import. */
const BELOW_CALLS = ["tasks", "upstream", "store", "policy", "web", "protocol", "telemetry", "config", "log"];

/**
 * Folders below every layer, which any folder under src/ may import: pure answers that layers which may import
 * nothing else (config/, protocol/) need too. address/: what a host name or address is (isLoopbackHost); it imports
 * nothing.
 */
const BASE = ["address"];

/** folder under src/ -> the other folders under src/ it may import from (besides BASE) */
const LAYERS = {
  // The kinds of endpoint (a named route, the lean tasks/get path, the route table): thin configurations of the
  // request pipeline, over the runtimes below them.
  endpoints: [
    "federated",
    "catalog",
    "replicas",
    "http",
    "server",
    "bridge-to-legacy",
    "bridge-to-modern",
    "modern-upstream",
    "tasks-2025",
    "calls",
    "ratelimit",
    "metrics",
    "auth",
    "credentials",
    ...BELOW_CALLS,
  ],
  // The federated endpoints' runtime (one endpoint over several upstreams): lists, calls, listens, legacy sessions.
  federated: ["replicas", "server", "bridge-to-modern", "federation", "catalog", "calls", ...BELOW_CALLS],
  // Replica forwarding: session routing, the forwarder, its credential, the internal listener.
  replicas: ["http", "server", "policy", "store", "upstream", "web", "protocol", "config", "log"],
  // The pass-through: a request relayed to the upstream as it came, its answer streamed back.
  http: ["server", "upstream", "web", "protocol", "telemetry", "config", "log"],
  // The request's Exchange, the pipeline and its shared steps, the Hono app and its own routes (health, /metrics,
  // /status): the only layer but the composition root that uses hono.
  server: [
    "credentials",
    "catalog",
    "policy",
    "auth",
    "ratelimit",
    "tasks",
    "metrics",
    "calls",
    "upstream",
    "web",
    "protocol",
    "telemetry",
    "config",
    "log",
  ],
  // The era bridge, modern clients before a legacy upstream: pooled sessions, MRTR, listens, the calls on them.
  "bridge-to-legacy": ["calls", ...BELOW_CALLS],
  // Tasks in front of a modern upstream that does not serve them itself.
  "modern-upstream": ["calls", ...BELOW_CALLS],
  // 2025-11-25 experimental tasks for legacy clients: drives calls with bridge-to-legacy/'s drive().
  "tasks-2025": ["bridge-to-legacy", "calls", ...BELOW_CALLS],
  // The era bridge the other way: legacy sessions served by the gateway in front of a modern-only upstream.
  "bridge-to-modern": ["calls", "upstream", "web", "protocol", "telemetry", "config", "log"],
  calls: BELOW_CALLS,
  tasks: ["store", "policy", "protocol", "telemetry", "config", "log", "metrics"],
  upstream: ["protocol", "telemetry", "config", "log"],
  store: ["protocol", "config", "log"],
  // Policy's pure rules (files directly in policy/): claims, tool access, task rules.
  "policy/*.ts": ["protocol", "config"],
  // A route's policy set (the auth gate, access, limits, task rules; swapped whole on a reload) and identity.
  "policy/sets": ["policy", "auth", "ratelimit", "catalog", "protocol", "config", "log"],
  // The catalog a platform team curates (issue 36): tool and prompt overrides, argument validation (Ajv), and
  // pinned definitions (digests, diffs, the registry over the pin store). The pipeline's catalog and pinning
  // steps (server/) and the federated endpoints apply them.
  catalog: ["store", "protocol", "config"],
  // Federation's pure building blocks (one endpoint over several upstreams): prefixed names, the cross-upstream
  // cursor, the resource URI index, the change feed, the task handles. No I/O; only federated/ and the root use it.
  federation: ["protocol", "config"],
  // Rate limits (limits.rules): rule matching and GCRA (pure), the budget stores (memory; Redis, with
  // store/'s LuaScript) and the limiter every route shares. The pipeline's steps (server/), the lean tasks/get path, the policy sets and the composition root use it.
  ratelimit: ["store", "policy", "protocol", "config", "log"],
  // Web-standard Response builders for the gateway's own answers: no I/O, usable by every layer that answers.
  web: ["protocol"],
  protocol: [],
  // A stdio upstream (upstream.command) served as Streamable HTTP on an internal listener. No layer lists it: the
  // composition root runs it, and src/cli.ts and src/check-config.ts use its command.ts.
  stdio: ["upstream", "protocol", "telemetry", "config", "log"],
  // Upstream credentials per caller (upstreams.<name>.oauth): the gateway as an OAuth client (token endpoint,
  // discovery, the token cache) and each mode's source; user grants, their vault and the consent flow (consent/).
  credentials: ["store", "web", "protocol", "config", "log"],
  // Verified identity (auth.jwt): token verification, the JWKS cache, the challenge and metadata builders.
  auth: ["web", "config", "log"],
  // Tracing on @opentelemetry/api (a no-op until an SDK registers); the SDK wiring (sdk.ts) is loaded by the composition root only, dynamically.
  telemetry: ["config", "log"],
  // Metrics (issue 11): the GatewayMetrics interface (tasks/ depends on it), prom-client behind it, the status page.
  metrics: ["protocol", "config"],
  log: ["config"],
  // The CLI's commands (init, --print-config's rendering): src/cli.ts runs them; they build on config/ and log/.
  commands: ["config", "log"],
  config: [],
  address: [],
};

const layerZones = Object.entries(LAYERS).map(([layer, listed]) => {
  const allowed = BASE.includes(layer) ? listed : [...listed, ...BASE];
  return {
    target: `./src/${layer}`,
    from: "./src",
    // A layer may import its own folder ("policy/*.ts": policy/).
    except: [layer.replace(/\/\*\.ts$/, ""), ...allowed].map((dir) => `./${dir}`),
    message:
      `Layering: src/${layer}/ may import only from ` +
      [layer, ...allowed].map((dir) => `src/${dir}/`).join(", ") +
      " (see eslint.config.js).",
  };
});

const compositionRootZone = {
  target: ["./src/!(gateway)/**", "./src/!(index|cli|main).ts"],
  from: "./src/gateway",
  message: "Only src/index.ts, src/cli.ts and src/main.ts may import src/gateway/, the composition root.",
};

const honoBan = {
  paths: [
    { name: "hono", message: "Only src/server/ (and the composition root: src/index.ts, src/gateway/) may use hono." },
  ],
  patterns: [
    {
      group: ["hono/*", "@hono/*"],
      message: "Only src/server/ (and the composition root: src/index.ts, src/gateway/) may use hono.",
    },
  ],
};

// The OpenTelemetry SDK (src/telemetry/sdk.ts) loads only when tracing is configured: src/gateway/tracing.ts
// takes it with a dynamic import(), which no-restricted-imports does not look at. A static import anywhere in
// src/ would load it at every start (bench/RESULTS.md, "Start time and RSS without the OpenTelemetry SDK").
const SDK_MESSAGE =
  "Load src/telemetry/sdk.ts only with a dynamic import() when tracing is configured (src/gateway/tracing.ts).";
const sdkBan = {
  paths: [],
  patterns: [{ group: ["**/telemetry/sdk.js", "**/telemetry/sdk"], message: SDK_MESSAGE }],
};
// Inside src/telemetry/, the SDK is a sibling.
const sdkSiblingBan = { paths: [], patterns: [{ group: ["./sdk.js", "./sdk"], message: SDK_MESSAGE }] };

/**
 * no-restricted-imports options made of `bans`. In flat config a later block's options for a rule replace an
 * earlier block's for the files both match, so every block below lists all the bans that apply to its files.
 */
function restrictedImports(...bans) {
  return ["error", { paths: bans.flatMap((b) => b.paths), patterns: bans.flatMap((b) => b.patterns) }];
}

const protocolIoBan = {
  paths: ["node:http", "http", "node:net", "net", "undici", "ioredis"].map((name) => ({
    name,
    message: "src/protocol/ is pure wire knowledge: no network or storage I/O.",
  })),
  patterns: [
    {
      group: ["undici/*", "ioredis/*"],
      message: "src/protocol/ is pure wire knowledge: no network or storage I/O.",
    },
  ],
};

// Tracing costs nothing when it is off because only src/telemetry/sdk.ts loads the OpenTelemetry SDK;
// everything else uses @opentelemetry/api (a no-op until an SDK registers).
const otelSdkBan = {
  selector: "ImportDeclaration[source.value=/^@opentelemetry.(sdk-|exporter-|resources|otlp-)/]",
  message: "Only src/telemetry/sdk.ts loads the OpenTelemetry SDK; use @opentelemetry/api (src/telemetry/trace.ts).",
};

// One error vocabulary: every JSON-RPC error the gateway sends is built by a function in
// src/protocol/errors.ts (code, message, data.reason, HTTP status), so outside that file an object
// property `code` may not be a JSON-RPC error code (-32768..-32000) or one of the named codes.
// Tests, benchmarks and fixtures are left alone: they play upstreams, whose errors are their own.
const errorCodeMessage =
  "Build the gateway's JSON-RPC errors in src/protocol/errors.ts (a builder with its data.reason), not inline.";
const errorCodeBans = [
  {
    selector:
      'Property:matches([key.name="code"], [key.value="code"]) > UnaryExpression.value[operator="-"] > Literal.argument[value>=32000][value<=32768]',
    message: errorCodeMessage,
  },
  {
    selector:
      'Property:matches([key.name="code"], [key.value="code"]) > Identifier.value[name=/^(JSONRPC_\\w+_ERROR|JSONRPC_INVALID_\\w+|JSONRPC_METHOD_NOT_FOUND|HEADER_MISMATCH|MISSING_REQUIRED_CLIENT_CAPABILITY|UNSUPPORTED_PROTOCOL_VERSION|LEGACY_RESOURCE_NOT_FOUND)$/]',
    message: errorCodeMessage,
  },
];

const tsFiles = ["src/**/*.ts", "test/**/*.ts", "bench/**/*.ts", "examples/**/*.ts", "scripts/**/*.ts"];

export default defineConfig(
  {
    ignores: ["dist/", "coverage/", "bench/out/", "scratch/", "**/*.cpuprofile"],
  },
  {
    files: tsFiles,
    languageOptions: {
      parser: tseslint.parser,
      ecmaVersion: "latest",
      sourceType: "module",
      parserOptions: { projectService: true, tsconfigRootDir: root },
    },
    plugins: { "import-x": importX, "@typescript-eslint": tseslint.plugin },
    settings: {
      "import-x/extensions": [".ts", ".js"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts"] },
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: path.join(root, "tsconfig.json") })],
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // Everywhere (tests and tools included): no import cycles. This rule does not count
      // type-only imports, and has no option that would (eslint-plugin-import-x 4.18):
      // scripts/import-cycles.ts, run by `npm run lint` after ESLint, counts them.
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/only-throw-error": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      // `{ dropped: _dropped, ...rest }` is how a copy without a property is made: its siblings of a rest are not unused.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { ignoreRestSiblings: true, argsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" },
      ],
    },
  },
  {
    files: ["src/**/*.ts"],
    rules: {
      "import-x/no-restricted-paths": ["error", { basePath: root, zones: [...layerZones, compositionRootZone] }],
      "no-restricted-imports": restrictedImports(honoBan, sdkBan),
    },
  },
  {
    // The server layer and the composition root may use hono (not the SDK statically).
    files: ["src/server/**/*.ts", "src/gateway/**/*.ts", "src/index.ts"],
    rules: { "no-restricted-imports": restrictedImports(sdkBan) },
  },
  {
    files: ["src/protocol/**/*.ts"],
    rules: { "no-restricted-imports": restrictedImports(honoBan, sdkBan, protocolIoBan) },
  },
  {
    files: ["src/telemetry/**/*.ts"],
    rules: { "no-restricted-imports": restrictedImports(honoBan, sdkBan, sdkSiblingBan) },
  },
  {
    // no-restricted-syntax in src/: each file gets the union of the bans that apply to it, because a
    // later config's options for a rule replace an earlier one's (see the selectors above).
    files: ["src/**/*.ts"],
    rules: { "no-restricted-syntax": ["error", otelSdkBan, ...errorCodeBans] },
  },
  {
    files: ["src/telemetry/sdk.ts"],
    rules: { "no-restricted-syntax": ["error", ...errorCodeBans] },
  },
  {
    files: ["src/protocol/errors.ts"],
    rules: { "no-restricted-syntax": ["error", otelSdkBan] },
  },
);
