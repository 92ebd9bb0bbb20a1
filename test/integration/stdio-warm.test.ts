// upstream.warmProcesses against the real server-everything over stdio: a session's initialize goes to a
// process started (and pinged) ahead of it, the pool refills after use and after a warm process is killed,
// maxProcesses holds, idle reaping leaves warm processes alone, and shutdown stops them. Every wait is bounded
// polling; nothing sleeps.
import { afterEach, describe, expect, it } from "vitest";
import { singleUpstream } from "../../src/config/upstream-set.js";
import { parseConfig } from "../../src/config/validate.js";
import { startGateway, type GatewayConfigInput } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { StdioHost } from "../../src/stdio/host.js";
import type { TestGateway } from "../helpers/gateway.js";
import { pollUntil } from "../helpers/poll.js";
import {
  everythingCommand,
  exists,
  faultCommand,
  INITIALIZE,
  childPids,
  isZombie,
  openRawSession,
  rpc,
  type StdioUpstreamOverrides,
} from "../helpers/stdio-servers.js";
import { parseExposition, value } from "../helpers/prometheus.js";

const opened: { gw: TestGateway; host: StdioHost }[] = [];
afterEach(async () => {
  for (const { gw, host } of opened.splice(0)) {
    await gw.close(0);
    await host.close();
  }
});

/** A gateway in front of a host the test holds (to read its warm pids), on 127.0.0.1:0. */
async function warmGateway(
  command: string[],
  upstream: StdioUpstreamOverrides,
): Promise<{ gw: TestGateway; host: StdioHost; url: string }> {
  const config = parseConfig({ upstream: { command, ...upstream } });
  const host = await StdioHost.start({ ...singleUpstream(config), command }, { log: createLogger("silent") });
  const gw = await startGateway(
    { upstream: { command, ...upstream }, server: { host: "127.0.0.1", port: 0 }, log: { level: "silent" } },
    { stdio: host },
  );
  opened.push({ gw, host });
  return { gw, host, url: gw.url };
}

const warmPids = (host: StdioHost, n: number): Promise<number[]> =>
  pollUntil(
    () => Promise.resolve(host.warmPids()),
    (pids) => pids.length === n,
    15_000,
  );

const gone = (pid: number): Promise<boolean> =>
  pollUntil(
    () => Promise.resolve(!exists(pid)),
    (g) => g,
    10_000,
  );

async function end(url: string, headers: Record<string, string>): Promise<void> {
  await fetch(url, { method: "DELETE", headers });
}

describe("stdio warm processes (server-everything)", () => {
  it("a session's initialize goes to the warm process, and the pool starts another", async () => {
    const { gw, host, url } = await warmGateway(everythingCommand(), { warmProcesses: 1, maxProcesses: 4 });
    const [warm] = await warmPids(host, 1);
    expect(host.processes).toBe(1);
    expect(host.sessionCount).toBe(0);

    const init = await rpc(url, INITIALIZE);
    expect(init.status).toBe(200);
    // The client's own initialize, unchanged: the server answers the version it asked for.
    expect(init.message).toMatchObject({
      id: 1,
      result: { protocolVersion: "2025-06-18", serverInfo: { name: expect.any(String) } },
    });
    const sessionId = init.headers.get("mcp-session-id") as string;
    const headers = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" };
    await rpc(url, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);
    const echo = await rpc(
      url,
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "warm" } } },
      headers,
    );
    expect(echo.message).toMatchObject({ id: 2, result: { content: [{ type: "text", text: "Echo: warm" }] } });

    // The pool refills with a new process; the warm one is the session's now.
    const [next] = await pollUntil(
      () => Promise.resolve(host.warmPids()),
      (p) => p.length === 1 && p[0] !== warm,
      15_000,
    );
    expect(next).not.toBe(warm);
    expect(host.pids()).toEqual(expect.arrayContaining([warm, next]));
    expect(host.processes).toBe(2);
    expect(await gw.stats()).toMatchObject({ upstreamProcesses: 2, upstreamWarmProcesses: 1 });
    const scraped = parseExposition(await (await fetch(`${gw.origin}/metrics`)).text());
    expect(value(scraped, "mcp_gateway_upstream_processes", { upstream: "default" })).toBe(2);
    expect(value(scraped, "mcp_gateway_upstream_warm_processes", { upstream: "default" })).toBe(1);

    // Ending the session ends the process that served it, which was the warm one: it serves one session only.
    await end(url, headers);
    expect(await gone(warm as number)).toBe(true);
    expect(exists(next as number)).toBe(true);
    expect(host.warmPids()).toEqual([next]);
  });

  it("a warm process that is killed is replaced", async () => {
    const { host } = await warmGateway(everythingCommand(), { warmProcesses: 2, maxProcesses: 4 });
    const before = await warmPids(host, 2);
    process.kill(before[0] as number, "SIGKILL");
    const after = await pollUntil(
      () => Promise.resolve(host.warmPids()),
      (p) => p.length === 2 && !p.includes(before[0] as number),
      15_000,
    );
    expect(after).toHaveLength(2);
    expect(after).toContain(before[1]);
    expect(after).not.toContain(before[0]);
    expect(host.processes).toBe(2);
  });

  it("counts within maxProcesses: sessions take the warm processes, the next one is refused, an ended one makes room", async () => {
    const { host, url } = await warmGateway(everythingCommand(), { warmProcesses: 2, maxProcesses: 2 });
    const warm = await warmPids(host, 2);
    const a = await openRawSession(url);
    const b = await openRawSession(url);
    expect(host.processes).toBe(2);
    expect(host.warmPids()).toEqual([]);
    expect(host.pids().sort()).toEqual([...warm].sort());

    const refused = await rpc(url, INITIALIZE);
    expect(refused.status).toBe(503);
    expect(refused.message).toMatchObject({ error: { data: { reason: "too_many_processes" } } });

    // One session ends: its slot goes to a new warm process, which the next session takes.
    await end(url, a.headers);
    const [refill] = await warmPids(host, 1);
    expect(warm).not.toContain(refill);
    expect(host.processes).toBe(2);
    const c = await openRawSession(url);
    expect(host.warmPids()).toEqual([]);
    expect(host.processes).toBe(2);
    await end(url, b.headers);
    await end(url, c.headers);
  });

  it("idle reaping ends idle sessions, never warm processes", async () => {
    const { host, url } = await warmGateway(everythingCommand(), {
      warmProcesses: 1,
      maxProcesses: 4,
      processIdleMs: 50,
    });
    const [first] = await warmPids(host, 1);
    await openRawSession(url);
    const [second] = await pollUntil(
      () => Promise.resolve(host.warmPids()),
      (p) => p.length === 1 && p[0] !== first,
    );
    // The session (served by the first warm process) is reaped; the warm process started after it is not.
    expect(await gone(first as number)).toBe(true);
    expect(host.sessionCount).toBe(0);
    expect(host.warmPids()).toEqual([second]);
    expect(exists(second as number)).toBe(true);
  });

  it("shutdown stops the warm processes, none left behind or a zombie", async () => {
    const { gw, host } = await warmGateway(everythingCommand(), { warmProcesses: 2, maxProcesses: 4 });
    const pids = await warmPids(host, 2);
    await gw.close(0);
    await host.close();
    for (const pid of pids) {
      expect(exists(pid)).toBe(false);
      expect(isZombie(pid)).toBe(false);
    }
    expect(host.processes).toBe(0);
  });
});

describe("stdio warm processes (scripted server)", () => {
  it("a warm process not ready yet is stopped to make room: a session start never fails for it", async () => {
    // no-ping: the warm process never answers its ping, so it holds the only slot until a session needs it.
    const { host, url } = await warmGateway(faultCommand("no-ping"), {
      warmProcesses: 1,
      maxProcesses: 1,
      spawnTimeoutMs: 60_000,
    });
    const waiting = await pollUntil(
      () => Promise.resolve(host.pids()),
      (p) => p.length === 1,
    );
    expect(host.warmPids()).toEqual([]);
    const session = await openRawSession(url);
    expect(exists(waiting[0] as number)).toBe(false);
    expect(host.processes).toBe(1);
    expect(host.pids()).not.toContain(waiting[0]);
    await end(url, session.headers);
  });
});

describe("stdio warm processes of a failing command", () => {
  it("each failure is logged with its cause and stderr, and the second in a row waits for the backoff", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("warn", (line) => void lines.push(JSON.parse(line) as Record<string, unknown>));
    const command = faultCommand("exit-at-once");
    const config = parseConfig({ upstream: { command, warmProcesses: 1 } });
    const host = await StdioHost.start({ ...singleUpstream(config), command }, { log });
    try {
      const failures = () =>
        Promise.resolve(lines.filter((l) => l.msg === "stdio warm process failed; starting another"));
      const logged = await pollUntil(failures, (f) => f.length >= 2, 15_000);
      expect(logged[0]).toMatchObject({
        level: "warn",
        cause: "exited before answering ping (exit code 7)",
        stderr: expect.stringContaining("starting fault server"),
        failuresInARow: 1,
        retryInMs: 0,
      });
      // Secrets in its stderr stay redacted in the log.
      expect(JSON.stringify(logged)).not.toContain("sk-live-abcdefghijklmnop");
      expect(logged[1]).toMatchObject({ failuresInARow: 2, retryInMs: 1_000 });
      // Nothing more is started until the backoff's timer fires: no tight respawn loop.
      expect(lines.filter((l) => l.msg === "stdio warm process failed; starting another")).toHaveLength(2);
      expect(host.warmProcesses).toBe(0);
    } finally {
      await host.close();
    }
  });
});

describe("stdio warm processes on a reload", () => {
  it("a named upstream whose warmProcesses changes gets a new set of warm processes; the old route keeps none", async () => {
    const script = everythingCommand()[1] as string;
    const config = (warmProcesses: number): GatewayConfigInput => ({
      upstreams: { ev: { command: everythingCommand(), warmProcesses } },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "silent" },
    });
    const gw = await startGateway(config(1));
    try {
      const stats = (): Promise<number> => gw.stats().then((s) => s.upstreamWarmProcesses ?? -1);
      expect(await pollUntil(stats, (n) => n === 1, 15_000)).toBe(1);
      const [before] = childPids(script);
      gw.reload(config(2));
      expect(await pollUntil(stats, (n) => n === 2, 15_000)).toBe(2);
      // The old route's warm process is stopped; only the new route's two are left.
      const after = await pollUntil(
        () => Promise.resolve(childPids(script)),
        (p) => p.length === 2 && !p.includes(before as number),
        15_000,
      );
      expect(after).toHaveLength(2);
      expect(after).not.toContain(before);
    } finally {
      await gw.close(0);
    }
  });
});
