import { afterEach, describe, expect, it, vi } from "vitest";
import { ClientLeg } from "../../src/calls/client-leg.js";

interface Frame {
  event: string | undefined;
  data: unknown;
  comment: boolean;
}

/** Splits an SSE body into events and comment blocks. */
function frames(text: string): Frame[] {
  const out: Frame[] = [];
  for (const block of text.split("\n\n")) {
    if (block === "") continue;
    const lines = block.split("\n");
    if (lines.every((l) => l.startsWith(":"))) {
      out.push({ event: undefined, data: undefined, comment: true });
      continue;
    }
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
    const data = lines
      .filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6))
      .join("\n");
    out.push({ event, data: JSON.parse(data) as unknown, comment: false });
  }
  return out;
}

function progress(n: number): Record<string, unknown> {
  return { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p", progress: n } };
}

describe("ClientLeg", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers with one JSON response when nothing was streamed", async () => {
    const leg = new ClientLeg(7, undefined, new AbortController().signal, 0);
    leg.result({ resultType: "complete", tools: [] });
    const res = await leg.response;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 7, result: { resultType: "complete", tools: [] } });
    expect(leg.closed).toBe(true);
  });

  it("error() answers JSON with the given status (200 by default)", async () => {
    const notFound = new ClientLeg("s-1", undefined, new AbortController().signal, 0);
    notFound.error({ code: -32601, message: "Method not found" }, 404);
    const res = await notFound.response;
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      jsonrpc: "2.0",
      id: "s-1",
      error: { code: -32601, message: "Method not found" },
    });

    const inBand = new ClientLeg(2, undefined, new AbortController().signal, 0);
    inBand.error({ code: -32602, message: "bad", data: { reason: "x" } });
    const res2 = await inBand.response;
    expect(res2.status).toBe(200);
    expect(await res2.json()).toEqual({
      jsonrpc: "2.0",
      id: 2,
      error: { code: -32602, message: "bad", data: { reason: "x" } },
    });
  });

  it("switches to SSE when a notification comes first, ending with the response", async () => {
    const leg = new ClientLeg(3, "p", new AbortController().signal, 0);
    leg.notify(progress(1));
    const res = await leg.response;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    leg.notify(progress(2));
    leg.result({ resultType: "complete", content: [] });
    // Nothing after the answer.
    leg.notify(progress(3));
    leg.result({ late: true });
    expect(frames(await res.text())).toEqual([
      { event: "message", data: progress(1), comment: false },
      { event: "message", data: progress(2), comment: false },
      {
        event: "message",
        data: { jsonrpc: "2.0", id: 3, result: { resultType: "complete", content: [] } },
        comment: false,
      },
    ]);
  });

  it("once streaming, an error goes out as the last event (the status can no longer change)", async () => {
    const leg = new ClientLeg(4, "p", new AbortController().signal, 0);
    leg.notify(progress(1));
    leg.error({ code: -32601, message: "nope" }, 404);
    const res = await leg.response;
    expect(res.status).toBe(200);
    const f = frames(await res.text());
    expect(f.at(-1)?.data).toEqual({ jsonrpc: "2.0", id: 4, error: { code: -32601, message: "nope" } });
  });

  it("only the first answer counts", async () => {
    const leg = new ClientLeg(5, undefined, new AbortController().signal, 0);
    leg.result({ first: true });
    leg.error({ code: -1, message: "second" }, 500);
    const res = await leg.response;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 5, result: { first: true } });
  });

  it("a keep-alive switches a slow JSON answer to SSE, then ends with the response", async () => {
    vi.useFakeTimers();
    const leg = new ClientLeg(6, undefined, new AbortController().signal, 1_000);
    let resolved: Response | undefined;
    void leg.response.then((r) => (resolved = r));
    await vi.advanceTimersByTimeAsync(999);
    expect(resolved).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(resolved?.headers.get("content-type")).toBe("text/event-stream");
    await vi.advanceTimersByTimeAsync(1_000);
    leg.result({ resultType: "complete" });
    expect(vi.getTimerCount()).toBe(0);
    const text = await (resolved as Response).text();
    expect(text.startsWith(": keepalive\n\n: keepalive\n\n")).toBe(true);
    expect(frames(text)).toEqual([
      { event: undefined, data: undefined, comment: true },
      { event: undefined, data: undefined, comment: true },
      { event: "message", data: { jsonrpc: "2.0", id: 6, result: { resultType: "complete" } }, comment: false },
    ]);
  });

  it("a quick answer cancels the keep-alive and stays JSON", async () => {
    vi.useFakeTimers();
    const leg = new ClientLeg(8, undefined, new AbortController().signal, 1_000);
    await vi.advanceTimersByTimeAsync(500);
    leg.result({ ok: true });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    const res = await leg.response;
    expect(res.headers.get("content-type")).toBe("application/json");
  });

  it("keepAliveMs 0 schedules nothing", () => {
    vi.useFakeTimers();
    const leg = new ClientLeg(9, undefined, new AbortController().signal, 0);
    expect(vi.getTimerCount()).toBe(0);
    leg.result({});
  });

  it("onClose listeners fire once when the client aborts, and later notifications are dropped", async () => {
    vi.useFakeTimers();
    const ac = new AbortController();
    const leg = new ClientLeg(10, "p", ac.signal, 1_000);
    const calls: string[] = [];
    leg.onClose(() => calls.push("a"));
    leg.onClose(() => calls.push("b"));
    ac.abort();
    expect(calls).toEqual(["a", "b"]);
    expect(leg.closed).toBe(true);
    // The keep-alive stopped with it.
    expect(vi.getTimerCount()).toBe(0);
    // A listener added after the client left fires at once.
    leg.onClose(() => calls.push("late"));
    expect(calls).toEqual(["a", "b", "late"]);
    // Nothing streamed after the client left; the response (for nobody) is still settled.
    leg.notify(progress(1));
    leg.result({ done: true });
    expect(calls).toEqual(["a", "b", "late"]);
    const res = await leg.response;
    expect(res.headers.get("content-type")).toBe("application/json");
  });

  it("onClose listeners do not fire when the leg finished before the client went away", async () => {
    const ac = new AbortController();
    const leg = new ClientLeg(11, undefined, ac.signal, 0);
    let fired = 0;
    leg.onClose(() => (fired += 1));
    leg.result({ ok: true });
    ac.abort();
    expect(fired).toBe(0);
    expect(leg.closed).toBe(true);
    await leg.response;
  });

  it("onClose listeners do not fire when a streamed leg finished", async () => {
    const ac = new AbortController();
    const leg = new ClientLeg(12, "p", ac.signal, 0);
    let fired = 0;
    leg.onClose(() => (fired += 1));
    leg.notify(progress(1));
    leg.result({ ok: true });
    ac.abort();
    expect(fired).toBe(0);
    expect(frames(await (await leg.response).text())).toHaveLength(2);
  });

  it("the client cancelling the SSE body closes the leg", async () => {
    const leg = new ClientLeg(13, "p", new AbortController().signal, 0);
    let fired = 0;
    leg.onClose(() => (fired += 1));
    leg.notify(progress(1));
    const res = await leg.response;
    await res.body?.cancel();
    expect(fired).toBe(1);
    expect(leg.closed).toBe(true);
    // Finishing after the cancel does not throw.
    expect(() => leg.result({ ok: true })).not.toThrow();
  });

  // BUG (reported): a signal that is already aborted when the leg is built (the client left
  // while the era probe or session acquire ran) never marks the leg closed, so the bridge keeps
  // the upstream call running for nobody. Remove `.fails` once the constructor checks signal.aborted.
  it("a signal that was aborted before the leg existed closes it at once", () => {
    const ac = new AbortController();
    ac.abort();
    const leg = new ClientLeg(14, undefined, ac.signal, 0);
    expect(leg.closed).toBe(true);
  });
});
