// Real stdio servers from npm behind the gateway: the SDK 1.x client through the
// gateway sees exactly what the same client sees over StdioClientTransport
// (lists, calls, resources, prompts, progress, elicitation, sampling); a 2.x
// modern client is served through the era bridge; the ext-tasks requester gets a
// slow tool as a task, and its cancel reaches the stdio server as notifications/cancelled.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { createLogger } from "../../src/log/logger.js";
import { connectExtTasksClient, eventually } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { connectModernClient, hasValidCacheHints, textOf } from "../helpers/modern-client.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import {
  connectDirectStdio,
  everythingCommand,
  faultCommand,
  memoryCommand,
  startStdioGateway,
} from "../helpers/stdio-servers.js";

type Direct = Awaited<ReturnType<typeof connectDirectStdio>>;

describe("SDK 1.x client: through the gateway in front of server-everything (stdio) = directly over stdio", () => {
  let gateway: TestGateway | undefined;
  let viaGateway: SdkClientHandle | undefined;
  let direct: Direct | undefined;
  beforeAll(async () => {
    gateway = await startStdioGateway(everythingCommand());
    [viaGateway, direct] = await Promise.all([connectSdkClient(gateway.url), connectDirectStdio(everythingCommand())]);
  });
  afterAll(async () => {
    await viaGateway?.close();
    await direct?.close();
    await gateway?.close();
  });
  const both = () => {
    if (!viaGateway || !direct) throw new Error("not started");
    return { g: viaGateway.client, d: direct.client };
  };

  it("lists tools, resources, resource templates and prompts identically", async () => {
    const { g, d } = both();
    expect(await g.listTools()).toEqual(await d.listTools());
    expect(await g.listResources()).toEqual(await d.listResources());
    expect(await g.listResourceTemplates()).toEqual(await d.listResourceTemplates());
    expect(await g.listPrompts()).toEqual(await d.listPrompts());
  });

  it("calls tools identically", async () => {
    const { g, d } = both();
    for (const [name, args] of [
      ["echo", { message: "through stdio" }],
      ["get-sum", { a: 2, b: 40 }],
      ["get-tiny-image", {}],
      ["get-structured-content", { location: "New York" }],
    ] as const) {
      expect(await g.callTool({ name, arguments: args }), name).toEqual(await d.callTool({ name, arguments: args }));
    }
  });

  it("reads resources and gets prompts identically", async () => {
    const { g, d } = both();
    const { resources } = await d.listResources();
    const uri = resources[0]?.uri as string;
    expect(await g.readResource({ uri })).toEqual(await d.readResource({ uri }));
    const { prompts } = await d.listPrompts();
    const simple = prompts.find((p) => !(p.arguments ?? []).some((a) => a.required)) ?? prompts[0];
    expect(await g.getPrompt({ name: simple?.name as string })).toEqual(
      await d.getPrompt({ name: simple?.name as string }),
    );
  });

  it("delivers progress on the call's stream, as directly", async () => {
    const { g, d } = both();
    const seen: { g: number[]; d: number[] } = { g: [], d: [] };
    const args = { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } };
    const [rg, rd] = await Promise.all([
      g.callTool(args, undefined, { onprogress: (p) => seen.g.push(p.progress) }),
      d.callTool(args, undefined, { onprogress: (p) => seen.d.push(p.progress) }),
    ]);
    expect(rg).toEqual(rd);
    // server-everything sends its last progress without waiting for it, so either path may see the
    // result before it: the same steps in the same order, one sequence a prefix of the other.
    const [shorter, longer] = seen.g.length <= seen.d.length ? [seen.g, seen.d] : [seen.d, seen.g];
    expect(longer.slice(0, shorter.length)).toEqual(shorter);
    expect(shorter.length).toBeGreaterThanOrEqual(3);
    expect(longer).toEqual([1, 2, 3, 4].slice(0, longer.length));
  });

  it("relays elicitation and sampling to the client, as directly", async () => {
    const { g, d } = both();
    for (const [name, args] of [
      ["trigger-elicitation-request", {}],
      ["trigger-sampling-request", { prompt: "hello", maxTokens: 20 }],
    ] as const) {
      expect(await g.callTool({ name, arguments: args }), name).toEqual(await d.callTool({ name, arguments: args }));
    }
    expect(viaGateway?.events.filter((e) => e.kind === "request").map((e) => e.method)).toEqual(
      expect.arrayContaining(["elicitation/create", "sampling/createMessage"]),
    );
  });
});

describe("server-memory (stdio) in a temporary folder: through the gateway = directly", () => {
  let dir: string | undefined;
  let gateway: TestGateway | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-memory-"));
  });
  afterAll(async () => {
    await gateway?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("creates entities and reads the graph back identically", async () => {
    const root = dir as string;
    gateway = await startStdioGateway(memoryCommand(), {
      upstream: { env: { MEMORY_FILE_PATH: join(root, "via-gateway.jsonl") }, cwd: root },
    });
    const viaGateway = await connectSdkClient(gateway.url);
    const direct = await connectDirectStdio(memoryCommand(), { MEMORY_FILE_PATH: join(root, "direct.jsonl") });
    try {
      expect(await viaGateway.client.listTools()).toEqual(await direct.client.listTools());
      const create = {
        name: "create_entities",
        arguments: { entities: [{ name: "Ada", entityType: "person", observations: ["wrote the first program"] }] },
      };
      expect(await viaGateway.client.callTool(create)).toEqual(await direct.client.callTool(create));
      const read = { name: "read_graph", arguments: {} };
      const graph = await viaGateway.client.callTool(read);
      expect(graph).toEqual(await direct.client.callTool(read));
      expect(JSON.stringify(graph)).toContain("wrote the first program");
    } finally {
      await viaGateway.close();
      await direct.close();
    }
  });
});

describe("modern clients in front of a stdio server", () => {
  const lines: string[] = [];
  let everything: TestGateway | undefined;
  let faulty: TestGateway | undefined;
  beforeAll(async () => {
    everything = await startStdioGateway(everythingCommand(), {
      tasks: { thresholdMs: 200, pollIntervalMs: 50, rules: [{ tool: "echo", mode: "auto", thresholdMs: 10_000 }] },
    });
    faulty = await startStdioGateway(faultCommand(), {
      tasks: { thresholdMs: 200, pollIntervalMs: 50, rules: [{ tool: "crash", mode: "always" }] },
      log: { level: "debug" },
      logger: createLogger("debug", (l) => lines.push(l)),
    });
  });
  afterAll(async () => {
    await everything?.close();
    await faulty?.close();
  });

  it("a 2.x client pinned to 2026-07-28 discovers, lists and calls through the era bridge", async () => {
    const c = await connectModernClient((everything as TestGateway).url);
    try {
      const tools = await c.client.listTools();
      expect(hasValidCacheHints(tools)).toBe(true);
      expect(tools.tools.map((t) => t.name)).toContain("echo");
      expect(textOf(await c.client.callTool({ name: "echo", arguments: { message: "modern over stdio" } }))).toBe(
        "Echo: modern over stdio",
      );
      // Elicitation inside a call: an MRTR round trip through the bridge.
      const elicited = await c.client.callTool({ name: "trigger-elicitation-request", arguments: {} });
      expect(textOf(elicited)).toContain("User provided the requested information");
    } finally {
      await c.close();
    }
  });

  it("the ext-tasks requester gets a slow tool as a task that completes", async () => {
    const h = await connectExtTasksClient((everything as TestGateway).url);
    try {
      const execution = await h.session.callTool("trigger-long-running-operation", { duration: 1, steps: 4 });
      expect(execution.kind).toBe("task");
      const { outcome } = await execution.settle();
      expect(outcome.status).toBe("completed");
      expect(JSON.stringify(resultFromTaskOutcome(outcome))).toContain("Long running operation completed");
      expect(h.errors).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("a task whose stdio server crashes ends failed, with an error naming the upstream, not its command", async () => {
    const h = await connectExtTasksClient((faulty as TestGateway).url);
    try {
      const execution = await h.session.callTool("crash", {});
      expect(execution.kind).toBe("task");
      const { outcome } = await execution.settle();
      expect(outcome.status).toBe("failed");
      if (outcome.status !== "failed") return;
      expect(outcome.error.message).toMatch(/exited during the session \(exit code 3\)/);
      expect(outcome.error.message).not.toContain("stdio-fault-server");
    } finally {
      await h.close();
    }
  });

  it("cancelling a task sends notifications/cancelled to the stdio server", async () => {
    const h = await connectExtTasksClient((faulty as TestGateway).url);
    try {
      const execution = await h.session.callTool("slow", { ms: 60_000 });
      expect(execution.kind).toBe("task");
      if (execution.kind !== "task") return;
      await execution.cancel();
      const told = await eventually(
        () => lines.find((l) => l.includes("stderr: received notifications/cancelled")),
        "the stdio server to receive notifications/cancelled",
      );
      expect(told).toMatch(/requestId/);
      expect((await h.session.task(execution.handle.taskId).snapshot()).status).toBe("cancelled");
    } finally {
      await h.close();
    }
  });
});
