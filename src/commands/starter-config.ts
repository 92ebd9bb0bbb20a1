// The starter config `mcp-task-gateway init` writes: one upstream, a task threshold, and commented-out examples
// of what a first deployment adds next. The examples are kept as YAML here and commented out when the text is
// built, so a test can check each one, uncommented, against the schema (test/unit/starter-config.test.ts).

/** A commented-out example: what it says, the block it belongs under (its indentation), and its YAML. */
export interface StarterExample {
  readonly intro: readonly string[];
  readonly under: readonly string[];
  readonly yaml: string;
  /** The field of its block it takes the place of, when uncommented (command instead of url). */
  readonly instead?: string;
}

export const STARTER_UPSTREAM = "http://127.0.0.1:3001/mcp";

export const STARTER_EXAMPLES = {
  stdio: {
    intro: ["Or a stdio server instead of url, one process per client session:"],
    under: ["upstream"],
    yaml: 'command: ["npx", "-y", "@modelcontextprotocol/server-everything"]',
    instead: "url",
  },
  redis: {
    intro: [
      "Tasks live in this process's memory. To share them between replicas and --workers, and keep them",
      "across restarts, use Redis (give a password in MCP_GATEWAY_STORE rather than in this file):",
    ],
    under: ["tasks"],
    yaml: "store: redis://127.0.0.1:6379/0",
  },
  secondUpstream: {
    intro: [
      "A second upstream, served at /mcp/github. ${GITHUB_TOKEN} is read from the environment when the file",
      "is loaded (header values only); an unset variable stops the start.",
    ],
    under: [],
    yaml: [
      "upstreams:",
      "  github:",
      "    url: https://api.githubcopilot.com/mcp/",
      "    headers:",
      "      authorization: Bearer ${GITHUB_TOKEN}",
    ].join("\n"),
  },
  auth: {
    intro: ["Verified bearer tokens (OAuth 2.1): every caller must present a JWT from your authorization server."],
    under: [],
    yaml: [
      "auth:",
      "  jwt:",
      "    jwksUrl: https://auth.example.com/.well-known/jwks.json",
      "    issuer: https://auth.example.com/",
      "    audience: https://gateway.example.com/mcp",
      "  resourceMetadata:",
      "    resource: https://gateway.example.com/mcp",
      "    authorization_servers: [https://auth.example.com/]",
    ].join("\n"),
  },
  rateLimit: {
    intro: ["A rate limit: each caller may make 60 tool calls a minute, at most 10 at once."],
    under: [],
    yaml: [
      "limits:",
      "  rules:",
      "    - name: calls-per-caller",
      "      method: tools/call",
      "      requests: 60",
      "      perMs: 60000",
      "      burst: 10",
    ].join("\n"),
  },
} as const satisfies Record<string, StarterExample>;

/** An example as it stands in the file: its intro and its YAML, each line commented out at its block's indentation. */
function commentedOut(example: StarterExample): string[] {
  const indent = "  ".repeat(example.under.length);
  return [...example.intro, ...example.yaml.split("\n")].map((line) => `${indent}# ${line}`);
}

/** The starter file's text: `file` is its path, for the commands it shows; `schema` where editors find the schema. */
export function starterConfig(file: string, schema: string): string {
  const e = STARTER_EXAMPLES;
  return [
    `# yaml-language-server: $schema=${schema}`,
    "# mcp-task-gateway configuration, written by `mcp-task-gateway init`.",
    "#",
    "# Set upstream.url to your MCP server, then check this file and start the gateway:",
    `#   mcp-task-gateway --check --config ${file}`,
    `#   mcp-task-gateway --config ${file}`,
    "# Flags and MCP_GATEWAY_* environment variables override this file; --print-config shows the result.",
    "# Every field, its default and its meaning: the JSON schema named here (an editor completes and explains",
    "# fields from it).",
    "",
    "# The schema of this file, for editors (JetBrains IDEs read this key, VS Code's YAML extension the first line).",
    `$schema: ${schema}`,
    "",
    "# The MCP server the gateway fronts, served at server.path.",
    "upstream:",
    `  url: ${STARTER_UPSTREAM}`,
    ...commentedOut(e.stdio),
    "",
    "# Where the gateway listens: http://127.0.0.1:8642/mcp. Loopback only; host 0.0.0.0 serves other machines.",
    "server:",
    "  host: 127.0.0.1",
    "  port: 8642",
    "  path: /mcp",
    "",
    "tasks:",
    "  # A tools/call still running after this many milliseconds becomes a task: the client gets a task handle",
    "  # and polls for the result, instead of holding its request open.",
    "  thresholdMs: 5000",
    ...commentedOut(e.redis),
    "",
    ...commentedOut(e.secondUpstream),
    "",
    ...commentedOut(e.auth),
    "",
    ...commentedOut(e.rateLimit),
    "",
  ].join("\n");
}
