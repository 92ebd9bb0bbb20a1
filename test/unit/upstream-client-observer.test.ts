// The upstream client's metrics hook (UpstreamObserver): each request is observed once, answered or failed, and an
// observer that throws never fails, strands or crashes the request it observes (metrics are never on the path).
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { singleUpstream } from "../../src/config/upstream-set.js";
import { parseConfig } from "../../src/config/validate.js";
import { UpstreamClient, type UpstreamObserver } from "../../src/upstream/client.js";

let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(req.url?.includes("teapot") ? 418 : 200, { "content-type": "application/json" }).end("{}");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

const clientOf = (observer: UpstreamObserver): UpstreamClient => {
  const client = new UpstreamClient(singleUpstream(parseConfig({ upstream: { url } })));
  client.observer = observer;
  return client;
};
const post = (client: UpstreamClient, search = "", signal = new AbortController().signal) =>
  client.request({
    method: "POST",
    search,
    headers: ["content-type", "application/json"],
    body: Buffer.from("{}"),
    signal,
  });

describe("UpstreamClient observer", () => {
  it("observes each answer once with its status, and each failure with whether the caller aborted it", async () => {
    const seen: string[] = [];
    const client = clientOf({
      answered: (method, status, seconds) => seen.push(`${method} ${status} ${seconds >= 0}`),
      failed: (method, _err, aborted) => seen.push(`${method} failed aborted=${aborted}`),
    });
    try {
      await (await post(client)).body.dump();
      await (await post(client, "?teapot")).body.dump();
      const stop = new AbortController();
      stop.abort();
      await expect(post(client, "", stop.signal)).rejects.toThrow();
      expect(seen).toEqual(["POST 200 true", "POST 418 true", "POST failed aborted=true"]);
    } finally {
      await client.close();
    }
  });

  it("an observer that throws neither fails nor strands the request", async () => {
    const client = clientOf({
      answered: () => {
        throw new Error("metrics broke");
      },
      failed: () => {
        throw new Error("metrics broke");
      },
    });
    try {
      const res = await post(client);
      expect(res.statusCode).toBe(200);
      await res.body.dump();
      const stop = new AbortController();
      stop.abort();
      await expect(post(client, "", stop.signal)).rejects.toThrow(/abort/i);
    } finally {
      await client.close();
    }
  });
});
