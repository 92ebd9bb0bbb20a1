// Faults of a stdio upstream, against the scripted fault server: a missing
// command, one that exits at once, a crash mid-call, garbage and oversized
// lines on stdout, the process cap, idle reaping, and a shutdown that leaves
// no process (and no zombie) behind. Every wait is bounded; nothing sleeps.
import { singleUpstream } from "../../src/config/upstream-set.js";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/validate.js";
import { createLogger } from "../../src/log/logger.js";
import { StdioProcess } from "../../src/stdio/child.js";
import { StdioHost } from "../../src/stdio/host.js";
import type { TestGateway } from "../helpers/gateway.js";
import { pollUntil } from "../helpers/poll.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import {
  childPids,
  exists,
  faultCommand,
  INITIALIZE,
  isZombie,
  openRawSession,
  rpc,
  startStdioGateway,
} from "../helpers/stdio-servers.js";

const gateways: TestGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close(0)));
});

async function gatewayFor(...args: Parameters<typeof startStdioGateway>): Promise<TestGateway> {
  const gw = await startStdioGateway(...args);
  gateways.push(gw);
  return gw;
}

async function processes(gw: TestGateway): Promise<number> {
  return (await gw.stats()).upstreamProcesses ?? -1;
}

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

describe("stdio upstream faults", () => {
  it("a command that does not exist: initialize gets 502 naming the upstream, never the command; /readyz says it is unavailable", async () => {
    const gw = await gatewayFor(["definitely-not-a-command-4d1f"]);
    const ready = await fetch(`${gw.origin}/readyz`);
    expect(ready.status).toBe(503);
    const readyText = await ready.text();
    expect(JSON.parse(readyText)).toMatchObject({
      status: "unavailable",
      upstreams: [{ name: "default", status: "unavailable" }],
    });
    // /readyz answers anyone: no command line, no path, no error text from the machine.
    expect(readyText).not.toContain("definitely-not-a-command-4d1f");
    const init = await rpc(gw.url, INITIALIZE);
    expect(init.status).toBe(502);
    expect(init.message).toMatchObject({
      id: 1,
      error: {
        code: -32603,
        message: expect.stringContaining("Upstream stdio server default could not be started (ENOENT)"),
        data: { reason: "upstream_process_failed", cause: "ENOENT" },
      },
    });
    expect(JSON.stringify(init.message)).not.toContain("definitely-not-a-command-4d1f");
    expect(await processes(gw)).toBe(0);
  });

  it("/readyz of a startable command is ready and spawns nothing", async () => {
    const gw = await gatewayFor(faultCommand());
    const ready = await fetch(`${gw.origin}/readyz`);
    expect(ready.status).toBe(200);
    const readyText = await ready.text();
    expect(JSON.parse(readyText)).toMatchObject({ status: "ready", upstreams: [{ name: "default", status: "ready" }] });
    expect(readyText).not.toContain("stdio-fault-server");
    expect(await processes(gw)).toBe(0);
  });

  it("a command that exits at once: its exit code in the error, its stderr and arguments only in the log", async () => {
    const gw = await gatewayFor(faultCommand("exit-at-once"));
    const init = await rpc(gw.url, INITIALIZE);
    expect(init.status).toBe(502);
    const error = init.message?.error as { message: string; data: Record<string, unknown> };
    expect(error.message).toBe("Upstream stdio server default exited before answering initialize (exit code 7)");
    expect(error.data).toEqual({ reason: "upstream_process_failed", upstream: "default", exitCode: 7, signal: null });
    // What the child printed stays in the gateway's log: a server's stderr can hold secrets.
    const text = JSON.stringify(init.message);
    for (const leak of ["cannot authenticate", "sk-live-abcdefghijklmnop", "stdio-fault-server"])
      expect(text).not.toContain(leak);
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 0,
      ),
    ).toBe(0);
  });

  it("a command that never answers initialize is killed after spawnTimeoutMs with a 504", async () => {
    const gw = await gatewayFor(faultCommand("no-initialize"), {
      upstream: { spawnTimeoutMs: 300, stopTimeoutMs: 200 },
    });
    const init = await rpc(gw.url, INITIALIZE);
    expect(init.status).toBe(504);
    expect(init.message).toMatchObject({
      error: { message: expect.stringContaining("did not answer initialize within upstream.spawnTimeoutMs (300 ms)") },
    });
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 0,
      ),
    ).toBe(0);
  });

  it("a crash mid-call: the call gets an error naming the command, the session answers 404, other sessions go on", async () => {
    const gw = await gatewayFor(faultCommand());
    const a = await openRawSession(gw.url);
    const b = await openRawSession(gw.url);
    const crashed = await rpc(gw.url, call(2, "crash"), a.headers);
    expect(crashed.message).toMatchObject({
      id: 2,
      error: {
        code: -32603,
        message: "Upstream stdio server default exited during the session (exit code 3)",
        data: { reason: "upstream_process_failed", exitCode: 3 },
      },
    });
    const after = await rpc(gw.url, call(3, "echo", { message: "again" }), a.headers);
    expect(after.status).toBe(404);
    const other = await rpc(gw.url, call(4, "echo", { message: "still here" }), b.headers);
    expect(other.message).toMatchObject({ id: 4, result: { content: [{ text: "echo: still here" }] } });
    // A client re-initializes and is served by a new process.
    const c = await openRawSession(gw.url);
    expect((await rpc(gw.url, call(5, "echo", { message: "new" }), c.headers)).message).toMatchObject({
      result: { content: [{ text: "echo: new" }] },
    });
  });

  it("garbage on stdout is logged and skipped; the call still gets its answer", async () => {
    const lines: string[] = [];
    const gw = await gatewayFor(faultCommand(), { logger: createLogger("warn", (l) => lines.push(l)) });
    const s = await openRawSession(gw.url);
    const answer = await rpc(gw.url, call(2, "garbage"), s.headers);
    expect(answer.message).toMatchObject({ id: 2, result: { content: [{ text: "after garbage" }] } });
    const skipped = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => String(l.msg).includes("not a JSON-RPC message"));
    expect(skipped.map((l) => l.why)).toEqual(["not JSON", "not JSON", "not a JSON-RPC message object"]);
  });

  it("an oversized line ends the session with a clear error", async () => {
    const gw = await gatewayFor(faultCommand(), { upstream: { maxLineBytes: 64 * 1024, stopTimeoutMs: 200 } });
    const s = await openRawSession(gw.url);
    const answer = await rpc(gw.url, call(2, "oversized", { bytes: 200_000 }), s.headers);
    expect(answer.message).toMatchObject({
      id: 2,
      error: {
        message: expect.stringContaining(
          "wrote a line longer than upstream.maxLineBytes (65536 bytes); its session was ended",
        ),
        data: { reason: "upstream_process_failed" },
      },
    });
    expect((await rpc(gw.url, call(3, "echo"), s.headers)).status).toBe(404);
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 0,
      ),
    ).toBe(0);
  });

  it("a body on a session that is not JSON, or longer than maxLineBytes, gets the transport's answer, and the session goes on", async () => {
    const gw = await gatewayFor(faultCommand(), { upstream: { maxLineBytes: 1024, stopTimeoutMs: 200 } });
    const s = await openRawSession(gw.url);
    const post = (body: string) =>
      fetch(gw.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...s.headers },
        body,
      });
    const garbled = await post("{not json");
    expect(garbled.status).toBe(400);
    expect(await garbled.json()).toMatchObject({ error: { code: -32700 } });
    const long = await post(JSON.stringify(call(2, "echo", { text: "x".repeat(2_000) })));
    expect(long.status).toBe(413);
    await long.body?.cancel();
    const answer = await rpc(gw.url, call(3, "echo"), s.headers);
    expect(answer.status).toBe(200);
    expect(answer.message).toMatchObject({ id: 3, result: expect.anything() });
  });

  it("50 sessions against maxProcesses 10: 10 served, 40 refused with 503 and a JSON-RPC error", async () => {
    const gw = await gatewayFor(faultCommand(), { upstream: { maxProcesses: 10 } });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => rpc(gw.url, { ...INITIALIZE, id: i + 1 })));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 503);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    expect(refused[0]?.message).toMatchObject({
      error: { code: -32603, data: { reason: "too_many_processes", limit: 10 } },
    });
    expect(refused[0]?.headers.get("retry-after")).toBe("1");
    expect(await processes(gw)).toBe(10);
  });

  it("reaps idle sessions, never one with a call in flight", async () => {
    const gw = await gatewayFor(faultCommand(), { upstream: { processIdleMs: 150, stopTimeoutMs: 200 } });
    const idle = await openRawSession(gw.url);
    const busy = await openRawSession(gw.url);
    const slow = rpc(gw.url, call(2, "slow", { ms: 1_500 }), busy.headers);
    // The idle one goes; the busy one stays for its whole call.
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 1,
      ),
    ).toBe(1);
    expect((await rpc(gw.url, call(3, "echo"), idle.headers)).status).toBe(404);
    expect((await slow).message).toMatchObject({ id: 2, result: { content: [{ text: "slow done after 1500 ms" }] } });
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 0,
      ),
    ).toBe(0);
  });

  it("DELETE ends the session's process", async () => {
    const gw = await gatewayFor(faultCommand());
    const s = await openRawSession(gw.url);
    expect(await processes(gw)).toBe(1);
    const res = await fetch(gw.url, { method: "DELETE", headers: s.headers });
    expect(res.status).toBe(200);
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 0,
      ),
    ).toBe(0);
    expect((await rpc(gw.url, call(2, "echo"), s.headers)).status).toBe(404);
  });

  it("shutdown: the call in flight ends, every process (and its group) is gone, and none is a zombie", async () => {
    const gw = await startStdioGateway(faultCommand("grandchild"), { upstream: { stopTimeoutMs: 200 } });
    const plain = await startStdioGateway(faultCommand("stubborn"), { upstream: { stopTimeoutMs: 200 } });
    try {
      await openRawSession(gw.url);
      const s = await openRawSession(gw.url);
      await openRawSession(plain.url);
      const hanging = rpc(gw.url, call(2, "hang"), s.headers).then(
        (a) => a.message,
        (err: Error) => err.message,
      );
      await pollUntil(
        () => processes(gw),
        (n) => n === 2,
      );
      const stats = await gw.stats();
      expect(stats.upstreamProcesses).toBe(2);
      // The metrics (on by default) count them for the single upstream, which is called default.
      const scraped = parseExposition(await (await fetch(`${gw.origin}/metrics`)).text());
      expect(value(scraped, "mcp_gateway_upstream_processes", { upstream: "default" })).toBe(2);
      const pids = [...childPids("stdio-fault-server.mjs")];
      expect(pids).toHaveLength(3);
      await Promise.all([gw.close(0), plain.close(0)]);
      // With no grace, the gateway cuts the call (before its answer started: "fetch failed"; after: the body is
      // "terminated") or answers it with an error: it never hangs.
      const answer = await hanging;
      expect(JSON.stringify(answer)).toMatch(/upstream_process_failed|shutting down|fetch failed|terminated/);
      for (const pid of pids) {
        expect(exists(pid), `process ${pid}`).toBe(false);
        // A grandchild the gateway killed is reaped by init, not by us: its group empties shortly after.
        expect(
          await pollUntil(
            async () => exists(-pid),
            (alive) => !alive,
          ),
          `process group ${pid}`,
        ).toBe(false);
        expect(isZombie(pid)).toBe(false);
      }
    } finally {
      await Promise.all([gw.close(0), plain.close(0)]);
    }
  });
});

describe("stdio upstream resumption", () => {
  it("a client that lost a call's stream resumes it with Last-Event-ID and gets the answer", async () => {
    const gw = await gatewayFor(faultCommand());
    const init = await rpc(gw.url, { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: "2025-11-25" } });
    const sessionId = init.headers.get("mcp-session-id") as string;
    const headers = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" };
    await rpc(gw.url, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);

    const aborter = new AbortController();
    const res = await fetch(gw.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify(call(2, "slow", { ms: 300 })),
      signal: aborter.signal,
    });
    // The priming event carries the id to resume from; then the client drops the stream.
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!/id: (\S+)/.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const lastEventId = /id: (\S+)/.exec(text)?.[1] as string;
    expect(lastEventId).toBeDefined();
    aborter.abort();

    const resumed = await fetch(gw.url, {
      headers: { accept: "text/event-stream", ...headers, "last-event-id": lastEventId },
    });
    expect(resumed.status).toBe(200);
    const body = resumed.body as ReadableStream<Uint8Array>;
    const r = body.getReader();
    let replayed = "";
    while (!replayed.includes("slow done")) {
      const { value, done } = await r.read();
      if (done) break;
      replayed += new TextDecoder().decode(value);
    }
    await r.cancel();
    expect(replayed).toContain('"id":2');
    expect(replayed).toContain("slow done after 300 ms");
  });
});

describe("stdio upstream: every way a session ends leaves no process behind", () => {
  const config = (command: string[], upstream: Record<string, unknown> = {}) => {
    const parsed = parseConfig({ upstream: { command, ...upstream } });
    return { ...singleUpstream(parsed), command };
  };

  it("an initialize the transport refuses (406: no text/event-stream in Accept) ends its process at once", async () => {
    const gw = await gatewayFor(faultCommand(), { upstream: { processIdleMs: 60_000 } });
    const res = await fetch(gw.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(INITIALIZE),
    });
    expect(res.status).toBe(406);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(
      await pollUntil(
        () => processes(gw),
        (n) => n === 0,
        3_000,
      ),
    ).toBe(0);
  });

  it("shutdown while a process is being spawned: close waits for it, and it is gone when close resolves", async () => {
    const host = await StdioHost.start(
      config(faultCommand("no-initialize"), { spawnTimeoutMs: 30_000, stopTimeoutMs: 200 }),
      { log: createLogger("silent") },
    );
    const original = StdioProcess.start.bind(StdioProcess);
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let spawning = (): void => {};
    const called = new Promise<void>((resolve) => (spawning = resolve));
    const spy = vi.spyOn(StdioProcess, "start").mockImplementation(async (opts) => {
      spawning();
      await gate;
      return original(opts);
    });
    try {
      const answer = host
        .serve(
          new Request(host.url, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          }),
          {
            body: Buffer.from(JSON.stringify(INITIALIZE)),
            done: new Promise<void>(() => {}),
            signal: new AbortController().signal,
          },
        )
        .then(
          (r) => r.status,
          () => "cut",
        );
      await called;
      const closing = host.close();
      release();
      const closedInTime = await Promise.race([
        closing.then(() => true),
        new Promise((resolve) => setTimeout(() => resolve(false), 5_000)),
      ]);
      expect(closedInTime).toBe(true);
      expect(host.processes).toBe(0);
      expect(childPids("stdio-fault-server.mjs")).toEqual([]);
      expect(await answer).not.toBe(200);
    } finally {
      spy.mockRestore();
      await host.close();
    }
  });

  it("a process whose descendant left its group and holds stdout: its crash still ends the session, and shutdown completes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "stdio-escaped-"));
    const pidFile = join(dir, "pid");
    const gw = await startStdioGateway([...faultCommand("escaped"), pidFile], { upstream: { stopTimeoutMs: 200 } });
    try {
      const s = await openRawSession(gw.url);
      const crashed = await Promise.race([
        rpc(gw.url, call(2, "crash"), s.headers),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5_000)),
      ]);
      expect(crashed?.message).toMatchObject({
        id: 2,
        error: { data: { reason: "upstream_process_failed", exitCode: 3 } },
      });
      expect(
        await pollUntil(
          () => processes(gw),
          (n) => n === 0,
        ),
      ).toBe(0);
      const closedInTime = await Promise.race([
        gw.close(0).then(() => true),
        new Promise((resolve) => setTimeout(() => resolve(false), 5_000)),
      ]);
      expect(closedInTime).toBe(true);
    } finally {
      try {
        process.kill(Number(await readFile(pidFile, "utf8")), "SIGKILL");
      } catch {
        // gone already
      }
      await rm(dir, { recursive: true, force: true });
      await gw.close(0);
    }
  });

  it("messages a process writes before answering initialize are kept up to a bound", async () => {
    const lines: string[] = [];
    const gw = await gatewayFor(faultCommand("chatty-init"), { logger: createLogger("debug", (l) => lines.push(l)) });
    await openRawSession(gw.url);
    const dropped = lines.filter((l) => l.includes("before initialize was answered; dropped"));
    expect(dropped.length).toBe(400);
  });
});
