// A round-robin TCP balancer with no stickiness, for the tests of gateway-held sessions on several replicas
// (issue 23): each connection it accepts goes to the next backend (one that refuses is skipped), so a client
// that opens a new connection per request (freshConnectionFetch) spreads its requests over every backend.
// It knows nothing of HTTP: what a real L4 balancer does.
import { connect, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { Agent, fetch as undiciFetch } from "undici";

export interface RoundRobin {
  /** http://127.0.0.1:PORT */
  origin: string;
  /** Connections handed to each backend so far, by backend origin. */
  counts: Map<string, number>;
  close(): Promise<void>;
}

/** `backends`: origins (http://host:port), read at each connection (a test may change the list). */
export async function startRoundRobin(backends: () => string[]): Promise<RoundRobin> {
  let next = 0;
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    const list = backends();
    const attempt = (tries: number): void => {
      if (tries >= list.length) return void client.destroy();
      const origin = list[next++ % list.length] as string;
      const { hostname, port } = new URL(origin);
      const upstream = connect({ host: hostname, port: Number(port) });
      track(upstream);
      upstream.once("error", () => {
        // A backend that is gone (killed): the next one gets the connection, as a balancer's health check would.
        if (!upstream.readyState.startsWith("open")) attempt(tries + 1);
        else client.destroy();
      });
      upstream.once("connect", () => {
        counts.set(origin, (counts.get(origin) ?? 0) + 1);
        // pipe() respects backpressure both ways; either side closing closes the other.
        client.pipe(upstream).pipe(client);
        client.resume();
        client.once("error", () => upstream.destroy());
        client.once("close", () => upstream.destroy());
        upstream.once("close", () => client.destroy());
      });
    };
    attempt(0);
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: "127.0.0.1" }, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    counts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A fetch that opens a new connection for every request (what spreads one client over a balancer's backends). */
export function freshConnectionFetch(): { fetch: typeof fetch; close(): Promise<void> } {
  const agent = new Agent({ maxRequestsPerClient: 1, pipelining: 0 });
  return {
    fetch: (input: string | URL | Request, init?: RequestInit) =>
      undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as object), dispatcher: agent }),
    close: () => agent.close(),
  };
}
