// The floor under a forwarded session request (issue 38): what one extra Node process in the path costs on this
// machine, with none of the gateway's code. Three processes:
//   - an origin: a Node HTTP server answering every POST with a 300-byte event stream, as the gateway's echo does,
//     listening on loopback TCP and on a Unix socket;
//   - a relay: a Node HTTP server that reads the request and sends it on with undici (one keep-alive Pool to the
//     origin over TCP, one over the Unix socket, chosen by the path), then writes the answer back in one write;
//   - the client (this process): one undici connection to each, requests one at a time, alternating
//     origin / relay over TCP / relay over the socket.
// Also the bare round trip: 64 bytes to an echoing process and back, over TCP and over a Unix socket.
//
//   flock /tmp/bench.lock node --import tsx bench/investigations/relay-floor.ts [requests]
import { fork } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createConnection, createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";

/** A process's user + system CPU so far, µs (/proc/PID/stat, in USER_HZ ticks of 10 ms). */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** A process's main-thread context switches so far: [voluntary (it waited), involuntary (it was preempted)]. */
function switches(pid: number): [number, number] {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, "utf8");
  const n = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
  return [n("voluntary_ctxt_switches"), n("nonvoluntary_ctxt_switches")];
}

const role = process.argv[2];
const ANSWER = `event: message\ndata: ${JSON.stringify({ result: { content: [{ type: "text", text: "Echo: hi".padEnd(220) }] }, jsonrpc: "2.0", id: 2 })}\n\n`;

// Exit through process.exit on SIGTERM, so that a --cpu-prof child writes its profile.
if (role === "origin" || role === "relay") process.on("SIGTERM", () => process.exit(0));

function ready(message: unknown): void {
  process.send?.(message);
}

if (role === "origin") {
  const sock = process.argv[3] as string;
  const handler = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.end(ANSWER);
    });
  };
  const tcp = createHttpServer(handler).listen(0, "127.0.0.1", () => {
    createHttpServer(handler).listen(sock, () => ready({ port: (tcp.address() as AddressInfo).port }));
  });
  // The bare round trip: an echo on TCP and on a socket.
  const echo = (s: Socket) => s.on("data", (d) => s.write(d));
  const echoTcp = createNetServer(echo).listen(0, "127.0.0.1", () => {
    createNetServer(echo).listen(`${sock}.echo`, () => ready({ echoPort: (echoTcp.address() as AddressInfo).port }));
  });
} else if (role === "relay") {
  const [port, sock] = [Number(process.argv[3]), process.argv[4] as string];
  const viaTcp = new Pool(`http://127.0.0.1:${port}`, { connections: 4 });
  const viaUnix = new Pool("http://localhost", { socketPath: sock, connections: 4 });
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const pool = req.url === "/unix" ? viaUnix : viaTcp;
      pool
        .request({
          method: "POST",
          path: "/mcp",
          headers: { "content-type": "application/json" },
          body: Buffer.concat(chunks),
        })
        .then(async (up) => {
          const body = Buffer.from(await up.body.arrayBuffer());
          res.writeHead(up.statusCode, { "content-type": "text/event-stream", "cache-control": "no-cache" });
          res.end(body);
        })
        .catch(() => {
          res.writeHead(502);
          res.end();
        });
    });
  });
  server.listen(0, "127.0.0.1", () => ready({ port: (server.address() as AddressInfo).port }));
} else {
  const requests = Number(process.argv[2] ?? 2000);
  const dir = mkdtempSync(join(tmpdir(), "relay-floor-"));
  const sock = join(dir, "origin.sock");
  const start = (args: string[], want: string[]) => {
    const child = fork(new URL(import.meta.url).pathname, args, { stdio: "inherit" });
    const got: Record<string, number> = {};
    return {
      child,
      ready: new Promise<Record<string, number>>((resolve) =>
        child.on("message", (m: Record<string, number>) => {
          Object.assign(got, m);
          if (want.every((k) => k in got)) resolve(got);
        }),
      ),
    };
  };
  const origin = start(["origin", sock], ["port", "echoPort"]);
  const o = await origin.ready;
  const relay = start(["relay", String(o.port), sock], ["port"]);
  const r = await relay.ready;
  const direct = new Pool(`http://127.0.0.1:${o.port}`, { connections: 1 });
  const relayed = new Pool(`http://127.0.0.1:${r.port}`, { connections: 1 });
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "echo", arguments: { message: "hi" } },
  });
  const time = async (pool: Pool, path: string): Promise<number> => {
    const t0 = performance.now();
    const res = await pool.request({ method: "POST", path, headers: { "content-type": "application/json" }, body });
    await res.body.text();
    return performance.now() - t0;
  };
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const d: number[] = [];
  const t: number[] = [];
  const u: number[] = [];
  let cpu0 = 0;
  let switches0: [number, number] = [0, 0];
  for (let i = 0; i < requests + 200; i++) {
    if (i === 200) {
      cpu0 = cpuUs(relay.child.pid as number);
      switches0 = switches(relay.child.pid as number);
    }
    const [a, b, c] = [await time(direct, "/mcp"), await time(relayed, "/tcp"), await time(relayed, "/unix")];
    if (i >= 200) (d.push(a), t.push(b), u.push(c));
  }
  // The relay's CPU (user + system, every thread) per request it relayed.
  const relayCpuUs = (cpuUs(relay.child.pid as number) - cpu0) / (2 * requests);
  // How often the relay was preempted / waited, per request (as forwarded-cpu.ts reports for the gateways).
  const switches1 = switches(relay.child.pid as number);
  const relaySwitches = {
    preempted: Math.round(((switches1[1] - switches0[1]) / (2 * requests)) * 100) / 100,
    waited: Math.round(((switches1[0] - switches0[0]) / (2 * requests)) * 100) / 100,
  };
  // The bare round trip, 64 bytes each way, one at a time.
  const pingPong = async (s: Socket): Promise<number> => {
    const xs: number[] = [];
    const msg = Buffer.alloc(64, 1);
    for (let i = 0; i < requests + 200; i++) {
      const t0 = performance.now();
      await new Promise<void>((resolve) => {
        let n = 0;
        const on = (chunk: Buffer) => {
          n += chunk.length;
          if (n >= 64) {
            s.off("data", on);
            resolve();
          }
        };
        s.on("data", on);
        s.write(msg);
      });
      if (i >= 200) xs.push(performance.now() - t0);
    }
    s.destroy();
    return p50(xs);
  };
  const connected = (s: Socket) => new Promise<Socket>((resolve) => s.once("connect", () => resolve(s)));
  const rttTcp = await pingPong(await connected(createConnection(o.echoPort as number, "127.0.0.1")));
  const rttUnix = await pingPong(await connected(createConnection(`${sock}.echo`)));
  const ms = (x: number) => Number(x.toFixed(3));
  console.log(
    JSON.stringify({
      requests,
      directP50Ms: ms(p50(d)),
      relayTcpP50Ms: ms(p50(t)),
      relayUnixP50Ms: ms(p50(u)),
      addedTcpMs: ms(p50(t) - p50(d)),
      addedUnixMs: ms(p50(u) - p50(d)),
      roundTripTcpMs: ms(rttTcp),
      roundTripUnixMs: ms(rttUnix),
      relayCpuUsPerRequest: Math.round(relayCpuUs),
      relaySwitches,
    }),
  );
  await direct.close();
  await relayed.close();
  origin.child.kill();
  relay.child.kill();
  rmSync(dir, { recursive: true, force: true });
}
