// Session ownership on the replica a request lands on (src/replicas/session-routing.ts): who holds a session is asked
// of the store once, then a request on a session another process holds is routed from memory, in the same turn.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import type { ReplicaForwarder } from "../../src/replicas/forward.js";
import { sessionRouting } from "../../src/replicas/session-routing.js";
import type { Exchange } from "../../src/server/exchange.js";
import type { SessionOwners } from "../../src/store/session-owners.js";
import type { TaskLeases } from "../../src/store/task-leases.js";

function exchange(sessionId: string): Exchange {
  const headers: Record<string, string> = { "mcp-session-id": sessionId };
  return {
    header: (name: string) => headers[name],
    forwarded: undefined,
    sessionOwner: undefined,
  } as unknown as Exchange;
}

function routing(addressTtlMs = 60_000) {
  const asked = { owner: 0, address: 0 };
  const owners = {
    replicaId: "here",
    holds: (id: string) => id === "held-here",
    ownerOf: (id: string) => {
      asked.owner++;
      return Promise.resolve(id === "elsewhere" ? "replica-b" : undefined);
    },
  } as unknown as SessionOwners;
  const leases = {
    addressOf: (replica: string) => {
      asked.address++;
      return Promise.resolve(replica === "replica-b" ? "http://10.0.0.2:9000" : undefined);
    },
  } as unknown as TaskLeases;
  let status = 200;
  const forwarder = {
    addressFor: (_replica: string, address: string) => address,
    session: () => Promise.resolve(new Response(null, { status })),
  } as unknown as ReplicaForwarder;
  const sessions = sessionRouting({
    owners,
    leases,
    forwarder,
    addressTtlMs,
    headersTimeoutMs: 1_000,
    log: createLogger("silent"),
  });
  return { sessions, asked, answer: (s: number) => (status = s) };
}

describe("session routing", () => {
  it("asks the store for a session's owner once, then routes it from memory without waiting", async () => {
    const { sessions, asked } = routing();
    const first = exchange("elsewhere");
    const routed = sessions.route(first);
    expect(routed).toBeInstanceOf(Promise);
    expect(await routed).toBeUndefined();
    expect(first.sessionOwner).toBe("http://10.0.0.2:9000");
    expect(asked).toEqual({ owner: 1, address: 1 });

    const next = exchange("elsewhere");
    expect(sessions.route(next)).toBeUndefined();
    expect(next.sessionOwner).toBe("http://10.0.0.2:9000");
    expect(asked).toEqual({ owner: 1, address: 1 });
  });

  it("a session held here, or already forwarded here, is served here", () => {
    const { sessions } = routing();
    const held = exchange("held-here");
    expect(sessions.route(held)).toBeUndefined();
    expect(held.sessionOwner).toBeUndefined();
  });

  it("an owner's address is asked again once it is older than its time to live", async () => {
    const { sessions, asked } = routing(1);
    await sessions.route(exchange("elsewhere"));
    await new Promise((r) => setTimeout(r, 5));
    const later = exchange("elsewhere");
    const routed = sessions.route(later);
    expect(routed).toBeInstanceOf(Promise);
    await routed;
    expect(later.sessionOwner).toBe("http://10.0.0.2:9000");
    expect(asked.address).toBe(2);
  });

  it("an owner that answers 404 is forgotten: the next request asks the store again", async () => {
    const { sessions, asked, answer } = routing();
    const first = exchange("elsewhere");
    await sessions.route(first);
    answer(404);
    expect((await sessions.forward(first)).status).toBe(404);
    const next = exchange("elsewhere");
    expect(sessions.route(next)).toBeInstanceOf(Promise);
    expect(asked.owner).toBe(2);
  });
});
