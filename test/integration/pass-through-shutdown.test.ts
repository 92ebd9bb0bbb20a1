// Shutdown reaches pass-through answers already streaming on the Node path (the web path's are in
// test/unit/fetch-path.test.ts): an idle event stream is ended cleanly at once, a call still streaming when the
// grace ends is cut, and either way the upstream's request is aborted and nothing stays in flight.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startTestGateway } from "../helpers/gateway.js";

const FIRST_EVENT = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n';

let upstream: Server;
let upstreamUrl: string;
/** Resolved each time the upstream sees an event stream closed before it finished. */
let cutStreams: Array<() => void> = [];

function streamCut(): Promise<void> {
  return new Promise((resolve) => cutStreams.push(resolve));
}

beforeAll(async () => {
  // Every request that is not a probe gets an event stream with one event, then nothing.
  upstream = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.method === "OPTIONS") {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(FIRST_EVENT);
      res.once("close", () => {
        if (res.writableFinished) return;
        const waiting = cutStreams;
        cutStreams = [];
        for (const w of waiting) w();
      });
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

async function firstChunk(res: Response): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const first = await reader.read();
  expect(Buffer.from(first.value ?? new Uint8Array()).toString()).toBe(FIRST_EVENT);
  return reader;
}

async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  for (;;) if ((await reader.read()).done) return;
}

describe("shutdown with pass-through answers streaming (Node path)", () => {
  it("ends an idle GET event stream cleanly at once and reports drained", async () => {
    const gw = await startTestGateway(upstreamUrl, { server: { sseKeepAliveMs: 0 } });
    const res = await fetch(gw.url, { headers: { accept: "text/event-stream" } });
    expect(res.status).toBe(200);
    const reader = await firstChunk(res);
    expect(gw.inFlight()).toBe(1);
    const cut = streamCut();
    await expect(gw.close(10_000)).resolves.toEqual({ drained: true });
    // A clean end: the client may resume the stream elsewhere.
    await expect(readToEnd(reader)).resolves.toBeUndefined();
    await cut;
    expect(gw.inFlight()).toBe(0);
  });

  it("cuts a call still streaming when the grace ends: the client sees an error, not a clean end", async () => {
    const gw = await startTestGateway(upstreamUrl, { server: { sseKeepAliveMs: 0 } });
    const res = await fetch(gw.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}',
    });
    expect(res.status).toBe(200);
    const reader = await firstChunk(res);
    const cut = streamCut();
    await expect(gw.close(0)).resolves.toEqual({ drained: false });
    // A clean end would let the client take a truncated call for a finished one.
    await expect(readToEnd(reader)).rejects.toBeDefined();
    await cut;
    expect(gw.inFlight()).toBe(0);
  });
});
