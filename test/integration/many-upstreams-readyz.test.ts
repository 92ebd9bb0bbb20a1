// /readyz of a gateway with several upstreams: every upstream answers → 200 "ready"; some down → still 200 (the
// routes whose upstream answers keep serving, so the replica stays in rotation) with status "degraded" and an
// entry per upstream saying which is down; all down → 503. A down upstream is a URL whose port has nothing
// listening. Real SDK 1.x servers for the ones that answer.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { getDeadUrl } from "../helpers/ports.js";

let one: SdkUpstream;
let two: SdkUpstream;
beforeAll(async () => {
  [one, two] = await Promise.all([startSdkUpstream(), startSdkUpstream()]);
});
afterAll(async () => {
  await Promise.allSettled([one?.close(), two?.close()]);
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

interface UpstreamReadiness {
  name: string;
  path: string;
  status: string;
  upstream: string;
}

interface Readiness {
  status: number;
  body: { status?: unknown; upstreams?: UpstreamReadiness[] } & Record<string, unknown>;
  /** body.upstreams by name. */
  upstreams: Record<string, UpstreamReadiness>;
}

/** The metrics token: with it, /readyz adds each upstream's path, address and cause to its name and state. */
const TOKEN = "readyz-test-token";

async function readyz(config: GatewayConfigInput, withToken = true): Promise<Readiness> {
  const gw = await startManyGateway({ ...config, metrics: { token: TOKEN } });
  cleanups.push(async () => void (await gw.close(0)));
  const res = await fetch(`${gw.origin}/readyz`, withToken ? { headers: { authorization: `Bearer ${TOKEN}` } } : {});
  const body = (await res.json()) as Readiness["body"];
  expect(Array.isArray(body.upstreams)).toBe(true);
  const upstreams = Object.fromEntries((body.upstreams ?? []).map((u) => [u.name, u]));
  return { status: res.status, body, upstreams };
}

describe("/readyz with several upstreams", () => {
  it("without the metrics token: each upstream's name and state, and nothing more (no path, address or cause)", async () => {
    const dead = await getDeadUrl();
    const { status, body, upstreams } = await readyz(
      { upstreams: { one: { url: one.url }, down: { url: dead } } },
      false,
    );
    expect(status).toBe(200);
    expect(body.status).toBe("degraded");
    expect(upstreams).toEqual({ one: { name: "one", status: "ready" }, down: { name: "down", status: "unavailable" } });
    const text = JSON.stringify(body);
    expect(text).not.toContain(new URL(one.url).host);
    expect(text).not.toContain(new URL(dead).host);
  });

  it("every upstream answers: 200, ready, and each upstream's entry says so", async () => {
    const { status, body, upstreams } = await readyz({ upstreams: { one: { url: one.url }, two: { url: two.url } } });
    expect(status).toBe(200);
    expect(body.status).toBe("ready");
    expect(upstreams).toEqual({
      one: expect.objectContaining({ path: "/mcp/one", status: "ready", upstream: new URL(one.url).origin }),
      two: expect.objectContaining({ path: "/mcp/two", status: "ready", upstream: new URL(two.url).origin }),
    });
  });

  it("one of two down: 200, degraded, and the entries say which one", async () => {
    const dead = await getDeadUrl();
    const { status, body, upstreams } = await readyz({ upstreams: { one: { url: one.url }, down: { url: dead } } });
    expect(status).toBe(200);
    expect(body.status).toBe("degraded");
    expect(upstreams).toEqual({
      one: expect.objectContaining({ status: "ready" }),
      down: expect.objectContaining({ path: "/mcp/down", status: "unavailable", upstream: new URL(dead).origin }),
    });
  });

  it("the single upstream down beside a named one that answers: 200, degraded, the single one named default", async () => {
    const dead = await getDeadUrl();
    const { status, body, upstreams } = await readyz({ upstream: { url: dead }, upstreams: { two: { url: two.url } } });
    expect(status).toBe(200);
    expect(body.status).toBe("degraded");
    expect(upstreams).toEqual({
      default: expect.objectContaining({ path: "/mcp", status: "unavailable", upstream: new URL(dead).origin }),
      two: expect.objectContaining({ path: "/mcp/two", status: "ready" }),
    });
  });

  it("all down: 503, unavailable, every entry saying so", async () => {
    const [x, y] = await Promise.all([getDeadUrl(), getDeadUrl()]);
    const { status, body, upstreams } = await readyz({ upstreams: { x: { url: x }, y: { url: y } } });
    expect(status).toBe(503);
    expect(body.status).toBe("unavailable");
    expect(upstreams).toEqual({
      x: expect.objectContaining({ status: "unavailable" }),
      y: expect.objectContaining({ status: "unavailable" }),
    });
  });
});
