// A federated call is observed under the member it went to: the server span of the client's request carries
// mcp_gateway.upstream, the access line names the member, and the member's upstream metrics count it, while
// the request itself is counted once, on the endpoint. Tracing to a local OTLP receiver, metrics on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { callTool } from "../helpers/modern-rpc.js";
import { attr, KIND, startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import type { TestGateway } from "../helpers/gateway.js";
import { pairConfig } from "../helpers/federated-pair.js";

let receiver: OtlpReceiver;
let legacy: SdkUpstream;
let modern: ModernUpstream;
let gateway: TestGateway;
let closed = false;
const lines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  legacy = await startSdkUpstream();
  modern = await startModernUpstream();
  gateway = await startManyGateway(
    {
      ...pairConfig(legacy.url, modern.url),
      log: { level: "info", access: true },
      telemetry: { endpoint: receiver.endpoint, serviceName: "federation-observed" },
    },
    { logger: createLogger("info", (line) => void lines.push(JSON.parse(line) as Record<string, unknown>)) },
  );
});

afterAll(async () => {
  if (!closed) await gateway?.close();
  await legacy?.close();
  await modern?.close();
  await receiver?.close();
});

const scrape = async () => parseExposition(await (await fetch(`${gateway.origin}/metrics`)).text());

describe("a federated call, observed", () => {
  it("names its member in the access line, the span and the member's upstream metrics; the endpoint counts it once", async () => {
    const before = await scrape();
    const upstreamCalls = (s: typeof before, upstream: string) =>
      s
        .filter(
          (x) => x.name === "mcp_gateway_upstream_request_duration_seconds_count" && x.labels.upstream === upstream,
        )
        .reduce((n, x) => n + x.value, 0);
    for (const [name, text] of [
      ["one__echo", "via one"],
      ["two__echo", "via two"],
    ] as const) {
      const answer = await callTool(`${gateway.url}/pair`, name, { text }, { caps: {} });
      expect(answer.status, answer.text).toBe(200);
    }
    const after = await scrape();
    expect(upstreamCalls(after, "one")).toBeGreaterThan(upstreamCalls(before, "one"));
    expect(upstreamCalls(after, "two")).toBeGreaterThan(upstreamCalls(before, "two"));
    const counted = (s: typeof before) =>
      value(s, "mcp_gateway_requests_total", {
        route: "mcp",
        era: "modern",
        method: "tools/call",
        status: "200",
      }) ?? 0;
    expect(counted(after) - counted(before)).toBe(2);
    // Each call under the member that served it (the request counter's upstream label).
    for (const member of ["one", "two"]) {
      const of = (s: typeof before) =>
        value(s, "mcp_gateway_requests_total", { route: "mcp", upstream: member, method: "tools/call" }) ?? 0;
      expect(of(after) - of(before)).toBe(1);
    }

    const access = lines.filter((l) => l.msg === "access" && l.route === "/mcp/pair");
    expect(access.map((l) => l.upstream)).toEqual(expect.arrayContaining(["one", "two"]));

    closed = true;
    await gateway.close();
    const spans = receiver.spans.filter((s) => s.kind === KIND.server && attr(s, "url.path") === "/mcp/pair");
    const members = spans.map((s) => attr(s, "mcp_gateway.upstream"));
    expect(members).toEqual(expect.arrayContaining(["one", "two"]));
  });
});
