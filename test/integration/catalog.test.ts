// The catalog (issue 36): tool overrides and argument validation over real peers, the SDK 1.x demo server (HTTP,
// it records what it receives) and server-everything (stdio), each through its named route and through a
// federated endpoint, with a 2026-07-28 client (SDK 2.x, and raw JSON-RPC for exact errors) and a 2025-11-25
// client (SDK 1.x). Renamed tools are listed and callable, pinned arguments reach the upstream and are absent from
// the listed schema, a pinned argument sent is refused, the upstream's own name of a renamed tool is unknown, an
// invalid call never reaches the upstream, warn mode passes and counts, and a renamed tool's call becomes a task.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { manyConfig, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { connectModernClient, textOf, type ModernClientHandle } from "../helpers/modern-client.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import { everythingCommand } from "../helpers/stdio-servers.js";
import { isRecord } from "../helpers/http.js";

let demo: SdkUpstream;
let gateway: TestGateway;

const DEMO_TOOLS = {
  add: {
    name: "plus_ten",
    description: "Adds ten to a number.",
    title: "Plus ten",
    annotations: { readOnlyHint: true },
    pin: { b: 10 },
    schema: { a: { maximum: 1000 } },
  },
  echo: { appendDescription: "Reviewed by the platform team.", defaults: { text: "hello" } },
};

beforeAll(async () => {
  demo = await startSdkUpstream({ record: true });
  gateway = await startManyGateway({
    upstreams: {
      demo: { url: demo.url, tools: DEMO_TOOLS, validateArguments: "enforce", prompts: { greet: { name: "welcome" } } },
      lenient: { url: demo.url, validateArguments: "warn" },
      jobs: { url: demo.url, tools: { add: { name: "plus_ten", pin: { b: 10 } } } },
      // Task rules name the upstream's tools: add may be a task (2025-11-25 clients ask with params.task).
      jobs2025: { url: demo.url, tools: { add: { name: "plus_ten", pin: { b: 10 } } }, validateArguments: "enforce" },
      everything: {
        command: everythingCommand(),
        tools: { "get-sum": { name: "add_five", pin: { b: 5 } } },
        validateArguments: "enforce",
      },
    },
    federated: {
      fed: {
        upstreams: ["demo", "everything"],
        tools: { everything__echo: { name: "say", pin: { message: "fixed" } } },
      },
    },
    tasks: {
      rules: [
        { upstream: "jobs", tool: "add", mode: "always" },
        { upstream: "jobs2025", tool: "add", mode: "required" },
      ],
    },
    federation: { listTimeoutMs: 10_000 },
    metrics: { enabled: true },
  });
}, 30_000);

afterAll(async () => {
  await gateway?.close(0);
  await demo?.close();
});

/** The tools/call messages the demo upstream received, by tool name. */
function demoCalls(tool: string): Array<Record<string, unknown>> {
  return demo.received
    .filter((m): m is Record<string, unknown> => isRecord(m) && m.method === "tools/call")
    .map((m) => m.params as Record<string, unknown>)
    .filter((p) => p.name === tool);
}

interface ListedTool {
  name: string;
  description?: string;
  title?: string;
  annotations?: Record<string, unknown>;
  inputSchema: { properties?: Record<string, Record<string, unknown>>; required?: string[] };
}

/** Each route and the names its tools are shown under. */
const ROUTES = [
  { route: "demo", plus: "plus_ten", echo: "echo", oldAdd: "add" },
  { route: "fed", plus: "demo__plus_ten", echo: "demo__echo", oldAdd: "demo__add" },
] as const;

describe.each(ROUTES)("SDK fixture through $route", ({ route, plus, echo, oldAdd }) => {
  const url = (): string => routeOf(gateway, route);

  describe("2026-07-28 client", () => {
    let client: ModernClientHandle;
    beforeAll(async () => {
      client = await connectModernClient(url());
    });
    afterAll(async () => {
      await client?.close();
    });

    it("lists the renamed tool with its overrides, the pinned argument out of its schema", async () => {
      const { tools } = await client.client.listTools(undefined, { cacheMode: "refresh" });
      const byName = new Map(tools.map((t) => [t.name, t as unknown as ListedTool]));
      expect(byName.has(oldAdd)).toBe(false);
      const listed = byName.get(plus);
      expect(listed?.description).toBe("Adds ten to a number.");
      expect(listed?.title).toBe("Plus ten");
      expect(listed?.annotations?.readOnlyHint).toBe(true);
      expect(Object.keys(listed?.inputSchema.properties ?? {})).toEqual(["a"]);
      expect(listed?.inputSchema.required ?? []).not.toContain("b");
      expect(listed?.inputSchema.properties?.a?.maximum).toBe(1000);
      const e = byName.get(echo);
      expect(e?.description).toMatch(/\n\nReviewed by the platform team\.$/);
      expect(e?.inputSchema.properties?.text?.default).toBe("hello");
    });

    it("a call to the renamed tool reaches the upstream under its own name with the pinned value", async () => {
      const before = demoCalls("add").length;
      const result = await client.client.callTool({ name: plus, arguments: { a: 5 } });
      expect(textOf(result as never)).toBe("15");
      const calls = demoCalls("add").slice(before);
      expect(calls.map((c) => c.arguments)).toEqual([{ a: 5, b: 10 }]);
    });

    it("a default is filled in when the call leaves the argument out", async () => {
      const result = await client.client.callTool({ name: echo, arguments: {} });
      expect(textOf(result as never)).toBe("hello");
    });

    it("a pinned argument sent by the client is refused, in any case or Unicode form", async () => {
      const before = demoCalls("add").length;
      for (const key of ["b", "B", "ｂ"]) {
        const answer = await callTool(url(), plus, { a: 1, [key]: 99 }, { caps: {} });
        expect(answer.body.error?.code).toBe(-32602);
        expect(answer.body.error?.data?.reason).toBe("pinned_argument");
      }
      expect(demoCalls("add").length).toBe(before);
    });

    it("the upstream's own name of a renamed tool is unknown", async () => {
      const answer = await callTool(url(), oldAdd, { a: 1, b: 2 }, { caps: {} });
      expect(answer.body.error?.code).toBe(-32602);
      // Through the endpoint, demo__add goes to the member's route as add, which refuses it there.
      expect(answer.body.error?.data?.reason).toBe("unknown_tool");
    });

    it("an invalid call is refused with the validator's path and message, and never reaches the upstream", async () => {
      await client.client.listTools(undefined, { cacheMode: "refresh" });
      const before = demo.received.length;
      const answer = await callTool(url(), plus, { a: "five" }, { caps: {} });
      expect(answer.body.error?.code).toBe(-32602);
      expect(answer.body.error?.data?.reason).toBe("invalid_arguments");
      expect(answer.body.error?.data?.errors).toEqual([{ path: "/a", message: "must be number" }]);
      // A narrowed argument is checked against the override's schema.
      const narrowed = await callTool(url(), plus, { a: 5000 }, { caps: {} });
      expect(narrowed.body.error?.data?.reason).toBe("invalid_arguments");
      expect(demo.received.slice(before).filter((m) => isRecord(m) && m.method === "tools/call")).toEqual([]);
    });
  });

  describe("2025-11-25 client", () => {
    let client: SdkClientHandle;
    beforeAll(async () => {
      client = await connectSdkClient(url());
    });
    afterAll(async () => {
      await client?.close();
    });

    it("lists and calls the renamed tool; the pinned value reaches the upstream", async () => {
      const { tools } = await client.client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain(plus);
      expect(names).not.toContain(oldAdd);
      const listed = tools.find((t) => t.name === plus);
      expect(Object.keys(listed?.inputSchema.properties ?? {})).toEqual(["a"]);
      const before = demoCalls("add").length;
      const result = await client.client.callTool({ name: plus, arguments: { a: 1 } });
      expect((result.content as Array<{ text: string }>)[0]?.text).toBe("11");
      expect(
        demoCalls("add")
          .slice(before)
          .map((c) => c.arguments),
      ).toEqual([{ a: 1, b: 10 }]);
    });

    it("refuses a pinned argument and an invalid call before the upstream", async () => {
      await client.client.listTools();
      const before = demo.received.length;
      const pinned = await client.client.callTool({ name: plus, arguments: { a: 1, b: 2 } }).catch((e: unknown) => e);
      expect(pinned).toBeInstanceOf(McpError);
      expect((pinned as McpError).code).toBe(-32602);
      expect((pinned as McpError).data).toMatchObject({ reason: "pinned_argument", argument: "b" });
      const invalid = await client.client.callTool({ name: plus, arguments: { a: "x" } }).catch((e: unknown) => e);
      expect((invalid as McpError).data).toMatchObject({ reason: "invalid_arguments" });
      expect(demo.received.slice(before).filter((m) => isRecord(m) && m.method === "tools/call")).toEqual([]);
    });
  });
});

describe.each([
  { route: "everything", sum: "add_five", old: "get-sum" },
  { route: "fed", sum: "everything__add_five", old: "everything__get-sum" },
])("server-everything through $route", ({ route, sum, old }) => {
  const url = (): string => routeOf(gateway, route);

  it("2026-07-28: lists the renamed tool without its pinned argument, and calls it with the pinned value", async () => {
    const client = await connectModernClient(url());
    try {
      const { tools } = await client.client.listTools(undefined, { cacheMode: "refresh" });
      const listed = tools.find((t) => t.name === sum) as unknown as ListedTool | undefined;
      expect(tools.map((t) => t.name)).not.toContain(old);
      expect(Object.keys(listed?.inputSchema.properties ?? {})).toEqual(["a"]);
      expect(listed?.inputSchema.required).toEqual(["a"]);
      // The sum is the upstream's own answer: 7 + the pinned 5.
      expect(textOf((await client.client.callTool({ name: sum, arguments: { a: 7 } })) as never)).toContain("12");
      const pinned = await callTool(url(), sum, { a: 7, b: 1 }, { caps: {} });
      expect(pinned.body.error?.data?.reason).toBe("pinned_argument");
      const invalid = await callTool(url(), sum, { a: [] }, { caps: {} });
      expect(invalid.body.error?.data?.reason).toBe("invalid_arguments");
      expect((await callTool(url(), old, { a: 1, b: 1 }, { caps: {} })).body.error?.data?.reason).toBe("unknown_tool");
    } finally {
      await client.close();
    }
  });

  it("2025-11-25: lists and calls the renamed tool; a pinned argument is refused", async () => {
    const client = await connectSdkClient(url());
    try {
      const { tools } = await client.client.listTools();
      expect(Object.keys(tools.find((t) => t.name === sum)?.inputSchema.properties ?? {})).toEqual(["a"]);
      const result = await client.client.callTool({ name: sum, arguments: { a: 1 } });
      expect((result.content as Array<{ text: string }>)[0]?.text).toContain("6");
      const pinned = await client.client.callTool({ name: sum, arguments: { a: 1, b: 1 } }).catch((e: unknown) => e);
      expect((pinned as McpError).data).toMatchObject({ reason: "pinned_argument" });
    } finally {
      await client.close();
    }
  });
});

describe("the federated endpoint's own overrides", () => {
  it("rename a member's tool by its prefixed name and pin its argument", async () => {
    const client = await connectModernClient(routeOf(gateway, "fed"));
    try {
      const { tools } = await client.client.listTools(undefined, { cacheMode: "refresh" });
      const names = tools.map((t) => t.name);
      expect(names).toContain("say");
      expect(names).not.toContain("everything__echo");
      const result = await client.client.callTool({ name: "say", arguments: {} });
      expect(textOf(result as never)).toContain("fixed");
      const refused = await callTool(routeOf(gateway, "fed"), "say", { message: "mine" }, { caps: {} });
      expect(refused.body.error?.data?.reason).toBe("pinned_argument");
    } finally {
      await client.close();
    }
  });
});

describe("prompts", () => {
  it("are listed renamed and got by their new name only", async () => {
    const url = routeOf(gateway, "demo");
    const client = await connectModernClient(url);
    try {
      const { prompts } = await client.client.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(["welcome"]);
      const got = await client.client.getPrompt({ name: "welcome", arguments: { name: "Ada" } });
      expect(JSON.stringify(got.messages)).toContain("Ada");
      const old = await modernRpc(url, "prompts/get", { name: "greet", arguments: { name: "Ada" } }, { name: "greet" });
      expect(old.body.error?.data?.reason).toBe("unknown_prompt");
    } finally {
      await client.close();
    }
  });
});

describe("a caller that never listed the tools", () => {
  it("2026-07-28: the gateway lists them on its behalf first, and the invalid call never reaches the upstream", async () => {
    const url = routeOf(gateway, "demo");
    const headers = { authorization: "Bearer never-listed-modern" };
    const before = demo.received.length;
    const answer = await callTool(url, "plus_ten", { a: "five" }, { caps: {}, headers });
    expect(answer.body.error?.data?.reason).toBe("invalid_arguments");
    const seen = demo.received.slice(before).filter(isRecord);
    expect(seen.some((m) => m.method === "tools/list")).toBe(true);
    expect(seen.filter((m) => m.method === "tools/call")).toEqual([]);
    // Listed once: the next call is checked against what that listing taught.
    const listsBefore = demo.received.filter((m) => isRecord(m) && m.method === "tools/list").length;
    const ok = await callTool(url, "plus_ten", { a: 4 }, { caps: {}, headers });
    expect((ok.body.result?.content as Array<{ text: string }>)[0]?.text).toBe("14");
    expect(demo.received.filter((m) => isRecord(m) && m.method === "tools/list").length).toBe(listsBefore);
  });

  it("2025-11-25: the same, on the client's session", async () => {
    const client = await connectSdkClient(routeOf(gateway, "demo"), {
      headers: { authorization: "Bearer never-listed-legacy" },
    });
    try {
      const before = demo.received.length;
      const invalid = await client.client
        .callTool({ name: "plus_ten", arguments: { a: "x" } })
        .catch((e: unknown) => e);
      expect((invalid as McpError).data).toMatchObject({ reason: "invalid_arguments" });
      expect(demo.received.slice(before).filter((m) => isRecord(m) && m.method === "tools/call")).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

describe("validateArguments: warn", () => {
  it("lets an invalid call through to the upstream, logs and counts it", async () => {
    const url = routeOf(gateway, "lenient");
    const client = await connectModernClient(url);
    try {
      await client.client.listTools(undefined, { cacheMode: "refresh" });
      const before = demoCalls("add").length;
      const answer = await callTool(url, "add", { a: "x", b: 1 }, { caps: {} });
      // The upstream judged it: its own error, not the gateway's.
      expect(answer.body.error?.data?.reason).not.toBe("invalid_arguments");
      expect(
        demoCalls("add")
          .slice(before)
          .map((c) => c.arguments),
      ).toEqual([{ a: "x", b: 1 }]);
      const metrics = await (await fetch(`${gateway.origin}/metrics`)).text();
      expect(metrics).toMatch(/mcp_gateway_catalog_calls_total\{upstream="lenient",outcome="invalid_warned"\} 1/);
    } finally {
      await client.close();
    }
  });
});

describe("tasks", () => {
  it("a renamed tool's call that becomes a task runs the upstream's tool with the pinned value", async () => {
    const url = routeOf(gateway, "jobs");
    const before = demoCalls("add").length;
    const answer = await callTool(url, "plus_ten", { a: 2 });
    const taskId =
      (answer.body.result?.task as Record<string, unknown> | undefined)?.taskId ?? answer.body.result?.taskId;
    expect(typeof taskId).toBe("string");
    const task = await settledTask(url, taskId as string);
    expect(task.status).toBe("completed");
    expect(
      demoCalls("add")
        .slice(before)
        .map((c) => c.arguments),
    ).toEqual([{ a: 2, b: 10 }]);
  });
});

describe("reload", () => {
  it("applies new overrides to the next request, on the route and on the federated endpoint", async () => {
    const config = (name: string, fedName: string) => ({
      upstreams: { d: { url: demo.url, tools: { add: { name } } } },
      federated: { f: { upstreams: ["d"], tools: { [`d__${name}`]: { name: fedName } } } },
    });
    const own = await startManyGateway(config("plus", "fed_plus"));
    try {
      const names = async (route: string): Promise<string[]> => {
        const answer = await modernRpc(routeOf(own, route), "tools/list", {});
        return ((answer.body.result?.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
      };
      expect(await names("d")).toContain("plus");
      expect(await names("f")).toContain("fed_plus");
      own.reload(manyConfig(config("total", "fed_total")));
      expect(await names("d")).toContain("total");
      expect(await names("d")).not.toContain("plus");
      expect(await names("f")).toContain("fed_total");
      const called = await callTool(routeOf(own, "f"), "fed_total", { a: 1, b: 2 }, { caps: {} });
      expect((called.body.result?.content as Array<{ text: string }>)[0]?.text).toBe("3");
      const old = await callTool(routeOf(own, "d"), "plus", { a: 1, b: 2 }, { caps: {} });
      // The old client name is no rename any more: it goes to the upstream, which has no such tool.
      expect(old.body.error !== undefined || old.body.result?.isError === true).toBe(true);
    } finally {
      await own.close(0);
    }
  });
});

describe("2025-11-25 tasks", () => {
  it("a renamed tool is marked as the upstream's task rule says, and its task runs it with the pinned value", async () => {
    const client = new Client(
      { name: "catalog-tasks", version: "1.0.0" },
      { capabilities: { tasks: { list: {}, cancel: {} } } },
    );
    const transport = new StreamableHTTPClientTransport(new URL(routeOf(gateway, "jobs2025")));
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const listed = tools.find((t) => t.name === "plus_ten") as { execution?: { taskSupport?: string } } | undefined;
      expect(listed?.execution?.taskSupport).toBe("required");
      const before = demoCalls("add").length;
      const created = await client.request(
        { method: "tools/call", params: { name: "plus_ten", arguments: { a: 3 }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      );
      const result = await client.request(
        { method: "tasks/result", params: { taskId: created.task.taskId } },
        CallToolResultSchema,
      );
      expect((result.content[0] as { text: string }).text).toBe("13");
      expect(
        demoCalls("add")
          .slice(before)
          .map((c) => c.arguments),
      ).toEqual([{ a: 3, b: 10 }]);
      const pinned = await client
        .request(
          { method: "tools/call", params: { name: "plus_ten", arguments: { a: 3, b: 1 }, task: { ttl: 60_000 } } },
          CreateTaskResultSchema,
        )
        .catch((e: unknown) => e);
      expect((pinned as McpError).data).toMatchObject({ reason: "pinned_argument" });
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });
});
