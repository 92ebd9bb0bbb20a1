// Names that match the config (issue 37): a client is told about an upstream by its configured name only, never
// by its URL (an internal address, a path, a key in the query), whatever failed: an upstream that cannot be
// reached, one that answers 5xx, one that does not answer in time; on a named route and on a federated endpoint,
// for a modern and a legacy client. Every log line that is about an upstream names it the same way (`upstream`,
// a configured name); lines may add its `origin` (scheme, host and port), never its path or query.
//
// The healthy member is server-everything; the 5xx and the silent upstreams are scripted (no real MCP peer
// produces either on demand), and the unreachable one is a port with nothing listening.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import type { TestGateway } from "../helpers/gateway.js";
import { legacyInitialize } from "../helpers/http.js";
import { callTool, modernRpc } from "../helpers/modern-rpc.js";
import { getDeadUrl } from "../helpers/ports.js";
import { startScriptedUpstream, type ScriptedUpstream } from "../helpers/scripted-upstream.js";
import { startServerEverything, type SpawnedServer } from "../helpers/server-everything.js";

const KEY = "SECRETKEY-9c1f";
const HIDDEN_PATH = "/internal/hidden-path";

/** Every request: a bare 500 (no JSON-RPC), as a crashed backend behind a proxy answers. */
function fails(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(500, { "content-type": "text/plain" }).end("internal error");
}

/** Every request: no answer, ever (the gateway's headers deadline ends it). */
function silent(): void {}

let everything: SpawnedServer;
let broken: ScriptedUpstream;
let slow: ScriptedUpstream;
let gw: TestGateway;
const lines: Array<Record<string, unknown>> = [];
/** What no client and no log line may show of the internal upstreams. */
const internal: string[] = [];

/** The upstream's URL with a path and a key in its query: what a hosted MCP URL often looks like. */
function hidden(url: string): string {
  const u = new URL(url);
  internal.push(u.host);
  return `${u.origin}${HIDDEN_PATH}?key=${KEY}`;
}

beforeAll(async () => {
  everything = await startServerEverything();
  broken = await startScriptedUpstream(fails);
  slow = await startScriptedUpstream(silent);
  const down = await getDeadUrl();
  gw = await startGateway(
    {
      upstreams: {
        everything: { url: everything.url },
        down: { url: hidden(down) },
        broken: { url: hidden(broken.url) },
        slow: { url: hidden(slow.url), headersTimeoutMs: 300 },
      },
      federated: { all: { upstreams: ["everything", "down", "broken", "slow"] } },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "debug" },
    },
    { logger: createLogger("debug", (l) => void lines.push(JSON.parse(l) as Record<string, unknown>)) },
  );
  internal.push(HIDDEN_PATH, KEY);
});

afterAll(async () => {
  await gw?.close(0);
  await everything?.close();
  await broken?.close();
  await slow?.close();
});

/** The answer shows nothing of the internal upstreams. */
function expectNoInternals(text: string, where: string): void {
  for (const secret of internal) expect(text, `${where} shows ${secret}`).not.toContain(secret);
}

const FAILING = ["down", "broken", "slow"] as const;

describe("a client is told about an upstream by its configured name only", () => {
  it.each(FAILING)("on the named route of %s: a modern call's error names it, and shows no URL", async (name) => {
    const answer = await callTool(`${gw.url}/${name}`, "echo", { message: "hi" });
    expect(answer.body.error, answer.text).toBeDefined();
    expect(answer.body.error?.data).toMatchObject({ upstream: name });
    expect(answer.body.error?.message).toContain(name);
    expectNoInternals(answer.text, `${name}: modern tools/call`);
  });

  it.each(FAILING)("on the named route of %s: a legacy initialize shows no URL", async (name) => {
    const res = await fetch(`${gw.url}/${name}`, legacyInitialize());
    const text = await res.text();
    expect(res.status).toBeGreaterThanOrEqual(500);
    expectNoInternals(text, `${name}: legacy initialize`);
    // The gateway's own error (the 5xx upstream's own body passes through as it is: "internal error").
    if (name !== "broken") expect(JSON.parse(text)).toMatchObject({ error: { data: { upstream: name } } });
  });

  it.each(FAILING)(
    "on the federated endpoint: a call to a tool of %s names the member, and shows no URL",
    async (name) => {
      const answer = await callTool(`${gw.url}/all`, `${name}__echo`, { message: "hi" });
      expect(answer.body.error, answer.text).toBeDefined();
      expect(answer.body.error?.data).toMatchObject({ upstream: name });
      expectNoInternals(answer.text, `all: ${name}__echo`);
    },
  );

  it("on the federated endpoint: a merged list leaves the failing members out and shows no URL", async () => {
    const answer = await modernRpc(`${gw.url}/all`, "tools/list", {});
    expect(answer.status).toBe(200);
    const names = (answer.body.result?.tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toContain("everything__echo");
    expectNoInternals(answer.text, "all: tools/list");
  });

  it("on the federated endpoint: a legacy client's session and its failing call show no URL", async () => {
    const init = await fetch(`${gw.url}/all`, legacyInitialize());
    expect(init.status).toBe(200);
    const session = init.headers.get("mcp-session-id") ?? "";
    expectNoInternals(await init.text(), "all: legacy initialize");
    for (const name of FAILING) {
      const res = await fetch(`${gw.url}/all`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: `${name}__echo`, arguments: { message: "hi" } },
        }),
      });
      const text = await res.text();
      expect(text).toContain(name);
      expectNoInternals(text, `all (legacy): ${name}__echo`);
    }
  });
});

describe("log lines name an upstream by its configured name", () => {
  it("every line's upstream is a configured name, and no line shows an upstream's path or query", () => {
    const configured = new Set(["everything", "down", "broken", "slow"]);
    const about = lines.filter((l) => l.upstream !== undefined);
    // The failures above were logged, each naming its upstream.
    expect(about.length).toBeGreaterThan(0);
    for (const name of FAILING) expect(about.some((l) => l.upstream === name)).toBe(true);
    for (const l of about) expect(configured.has(l.upstream as string), JSON.stringify(l)).toBe(true);
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(HIDDEN_PATH);
  });
});
