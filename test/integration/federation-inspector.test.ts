// The official MCP Inspector CLI (@modelcontextprotocol/inspector-cli 1.0.3, an SDK 1.x client: a legacy session
// the gateway holds) drives a federated endpoint over the SDK 1.x demo server (legacy, HTTP) and the SDK 2.x
// modern-only server, both with a tool named echo, a prompt named greet and the resource demo://readme. What it
// prints on the endpoint is what it prints on the members' own routes, with every name prefixed by its upstream.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { pairConfig } from "../helpers/federated-pair.js";
import { inspect, runInspector } from "../helpers/inspector-cli.js";
import { routeOf, startManyGateway } from "../helpers/many-upstreams.js";

let legacy: SdkUpstream;
let modern: ModernUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  legacy = await startSdkUpstream();
  modern = await startModernUpstream({ legacy: "reject" });
  gateway = await startManyGateway(pairConfig(legacy.url, modern.url));
});

afterAll(async () => {
  await gateway?.close(0);
  await legacy?.close();
  await modern?.close();
});

const fed = (): string => routeOf(gateway, "pair");
const MEMBERS = ["one", "two"] as const;

type Named = { name: string };
const namesOf = (result: Record<string, unknown>, key: string): string[] =>
  (result[key] as Named[]).map((item) => item.name);

/** What the Inspector lists on each member's own route, each name prefixed by its member, sorted. */
async function prefixedOnRoutes(method: string, key: string): Promise<string[]> {
  const lists = await Promise.all(MEMBERS.map((m) => inspect(routeOf(gateway, m), method)));
  return lists.flatMap((list, i) => namesOf(list, key).map((n) => `${MEMBERS[i]}__${n}`)).sort();
}

// Each test spawns several Inspector processes (Node starting up, on a shared machine): a minute, not the default.
describe("the MCP Inspector CLI on a federated endpoint", { timeout: 60_000 }, () => {
  it("tools/list: every member's tools, prefixed, the two echo tools side by side, as listed on the routes", async () => {
    const [listed, own] = await Promise.all([inspect(fed(), "tools/list"), prefixedOnRoutes("tools/list", "tools")]);
    const names = namesOf(listed, "tools");
    expect(names).toContain("one__echo");
    expect(names).toContain("two__echo");
    expect([...names].sort()).toEqual(own);
    // The tools themselves are the members' own, renamed: descriptions and schemas as the route gives them.
    const direct = (await inspect(routeOf(gateway, "two"), "tools/list")).tools as Array<Named & object>;
    const echo = (listed.tools as Array<Named & object>).find((t) => t.name === "two__echo");
    expect(echo).toEqual({ ...direct.find((t) => t.name === "echo"), name: "two__echo" });
  });

  it("tools/call of each echo answers exactly as the member's route does", async () => {
    for (const member of MEMBERS) {
      const args = ["--tool-arg", `text=hello ${member}`];
      const [viaFed, viaRoute] = await Promise.all([
        inspect(fed(), "tools/call", ["--tool-name", `${member}__echo`, ...args]),
        inspect(routeOf(gateway, member), "tools/call", ["--tool-name", "echo", ...args]),
      ]);
      expect(viaFed).toEqual(viaRoute);
      expect(viaFed).toMatchObject({ content: [{ type: "text", text: `hello ${member}` }] });
    }
  });

  it("structured content, a tool's isError result and a JSON-RPC error come through as on the member's route", async () => {
    for (const [tool, args] of [
      ["add", ["--tool-arg", "a=1", "b=2"]],
      ["fail", []],
    ] as const) {
      const [viaFed, viaRoute] = await Promise.all([
        inspect(fed(), "tools/call", ["--tool-name", `one__${tool}`, ...args]),
        inspect(routeOf(gateway, "one"), "tools/call", ["--tool-name", tool, ...args]),
      ]);
      expect(viaFed).toEqual(viaRoute);
    }
    const [thrown, thrownOnRoute] = await Promise.all([
      runInspector(fed(), ["--method", "tools/call", "--tool-name", "one__throw_error"]),
      runInspector(routeOf(gateway, "one"), ["--method", "tools/call", "--tool-name", "throw_error"]),
    ]);
    expect(thrown.code).not.toBe(0);
    expect(thrownOnRoute.code).toBe(thrown.code);
    // The same JSON-RPC error, under the name the caller used.
    expect(thrown.stderr).toContain("MCP error -32603: throw_error was called");
    expect(thrown.stderr.replace("one__throw_error", "throw_error")).toBe(thrownOnRoute.stderr);
  });

  it("tools/call of a name no member has fails with the endpoint's error, not a hang", async () => {
    const run = await runInspector(fed(), ["--method", "tools/call", "--tool-name", "three__echo"]);
    expect(run.code).not.toBe(0);
    expect(`${run.stdout}${run.stderr}`).toContain("Unknown name: three__echo");
  });

  it("prompts/list and prompts/get: prefixed, and the prompt as the member's route gives it", async () => {
    const [listed, own] = await Promise.all([
      inspect(fed(), "prompts/list"),
      prefixedOnRoutes("prompts/list", "prompts"),
    ]);
    expect([...namesOf(listed, "prompts")].sort()).toEqual(own);
    expect(own).toEqual(expect.arrayContaining(["one__greet", "two__greet"]));
    for (const member of MEMBERS) {
      const args = ["--prompt-args", "name=Ada"];
      const [viaFed, viaRoute] = await Promise.all([
        inspect(fed(), "prompts/get", ["--prompt-name", `${member}__greet`, ...args]),
        inspect(routeOf(gateway, member), "prompts/get", ["--prompt-name", "greet", ...args]),
      ]);
      expect(viaFed).toEqual(viaRoute);
    }
  });

  it("resources/list and resources/read: a URI both members list is told apart, and each reads as on its route", async () => {
    const listed = (await inspect(fed(), "resources/list")).resources as Array<{ uri: string }>;
    const uris = listed.map((r) => r.uri);
    // The first member keeps its URI; the second member's demo://readme is rewritten to stay distinct.
    expect(uris).toContain("demo://readme");
    const other = uris.find((u) => u.startsWith("mcp-fed://two/"));
    expect(other, JSON.stringify(uris)).toBeDefined();

    const [first, firstOwn] = await Promise.all([
      inspect(fed(), "resources/read", ["--uri", "demo://readme"]),
      inspect(routeOf(gateway, "one"), "resources/read", ["--uri", "demo://readme"]),
    ]);
    expect(first).toEqual(firstOwn);
    const [second, secondOwn] = await Promise.all([
      inspect(fed(), "resources/read", ["--uri", other as string]),
      inspect(routeOf(gateway, "two"), "resources/read", ["--uri", "demo://readme"]),
    ]);
    const text = (r: Record<string, unknown>) => (r.contents as Array<{ text?: string }>).map((c) => c.text);
    expect(text(second)).toEqual(text(secondOwn));
    expect(text(second)).not.toEqual(text(first));
  });
});
