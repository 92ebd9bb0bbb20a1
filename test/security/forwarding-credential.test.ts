// Issue 33, finding 4: the credential replicas forward with (the mcp-gateway-forwarded header) neither leaks to
// an upstream nor works a second time.
//
// Two replica processes share the test Redis (a key prefix of their own) in front of the SDK 1.x demo server,
// which sits behind a recording proxy (every header the upstream receives is kept). A legacy client's initialize
// that declares capabilities.tasks makes the gateway hold the session (2025-11-25 tasks; the demo server serves
// none itself), on the replica it reached: the owner. The owner's server.advertiseUrl names a capture proxy of
// the test's in front of its real internal listener (server.internalPort), so every request the other replica
// forwards to it passes through the test, which keeps it whole (method, path, headers, body) to send it again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FORWARDED_HEADER } from "../../src/replicas/forward-token.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { sendRaw, startCaptureProxy, type CapturedRequest, type CaptureProxy } from "../helpers/capture-proxy.js";
import { startRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import { isRecord } from "../helpers/http.js";
import { getFreePort } from "../helpers/ports.js";
import { replicaConfig, Replicas, type Json, type ReplicaProcess, START_LINE } from "../helpers/replicas.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { rpc } from "../helpers/stdio-servers.js";

const PROTOCOL = "2025-11-25";
const CALLER = { authorization: "Bearer finding-4-caller" };
/** The credential's header, as the code names it (mcp-gateway-forwarded today), or any other of the gateway's own. */
const isCredentialHeader = (name: string): boolean =>
  name.toLowerCase() === FORWARDED_HEADER.toLowerCase() || name.toLowerCase().startsWith("mcp-gateway-");

const replicas = new Replicas();
let redis: TestRedis;
let demo: SdkUpstream;
/** What the upstream receives. */
let upstream: RecordingProxy;
/** What the other replica forwards to the owner's internal listener. */
let capture: CaptureProxy;
let owner: ReplicaProcess;
let other: ReplicaProcess;
/** The owner's real internal listener (http://127.0.0.1:PORT), the capture proxy's target. */
let internal: string;

function config(prefix: string, server: Json = {}): Json {
  return replicaConfig(upstream.url, TEST_REDIS_URL, prefix, { adaptive: false }, { server });
}

/**
 * The owner, its internal listener on a port picked here (the capture proxy in front of it must know it before
 * the replica starts, and server.advertiseUrl hides it from the store); another process may take a freed port
 * first, so a start that fails is tried again on a new one.
 */
async function startOwner(prefix: string): Promise<ReplicaProcess> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await getFreePort();
    internal = `http://127.0.0.1:${port}`;
    capture = await startCaptureProxy(internal);
    try {
      return await replicas.start(
        "owner",
        config(prefix, { internalPort: port, advertiseUrl: capture.origin }),
        [],
        START_LINE,
      );
    } catch (err) {
      lastError = err;
      await capture.close();
    }
  }
  throw lastError;
}

beforeAll(async () => {
  redis = await testRedis();
  demo = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  upstream = await startRecordingProxy(demo.url);
  const prefix = redis.freshPrefix();
  [owner, other] = await Promise.all([startOwner(prefix), replicas.start("other", config(prefix), [], START_LINE)]);
}, 60_000);

afterAll(async () => {
  await replicas.cleanup();
  await capture?.close();
  await upstream?.close();
  await demo?.close();
  await redis?.cleanup();
});

/** A 2025-11-25 task session opened on the owner: the gateway's, held there. Returns its request headers. */
async function taskSession(): Promise<Record<string, string>> {
  const init = await rpc(
    owner.url,
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: PROTOCOL,
        capabilities: { tasks: { list: {}, cancel: {} } },
        clientInfo: { name: "finding-4", version: "1" },
      },
    },
    CALLER,
  );
  const sessionId = init.headers.get("mcp-session-id");
  if (init.status !== 200 || !sessionId)
    throw new Error(`initialize failed: ${init.status} ${JSON.stringify(init.message)}`);
  // The gateway added the tasks capability: the session is the gateway's (the demo server declares none).
  const result = init.message?.result;
  expect(isRecord(result) && isRecord(result.capabilities) && isRecord(result.capabilities.tasks)).toBe(true);
  const headers = { ...CALLER, "mcp-session-id": sessionId, "mcp-protocol-version": PROTOCOL };
  const ack = await rpc(owner.url, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);
  expect(ack.status).toBe(202);
  return headers;
}

const echoCall = (id: number, text: string) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "echo", arguments: { text } },
});

/** The text of a tool result. */
function textOf(message: Record<string, unknown> | undefined): string | undefined {
  const result = message?.result;
  if (!isRecord(result) || !Array.isArray(result.content)) return undefined;
  const first: unknown = result.content[0];
  return isRecord(first) && typeof first.text === "string" ? first.text : undefined;
}

/** The request the capture proxy saw whose JSON body carries `text` (a unique marker). */
function capturedWith(text: string): CapturedRequest {
  const found = capture.captured.find((r) => r.body.toString("utf8").includes(text));
  if (!found)
    throw new Error(
      `the other replica forwarded nothing carrying ${text} (captured: ${capture.captured.map((r) => `${r.method} ${r.path}`).join(", ")})`,
    );
  return found;
}

/** The upstream calls of echo with `text`, as the upstream received them. */
function upstreamEchoes(text: string) {
  return upstream
    .posted()
    .filter(
      ({ message }) =>
        message.method === "tools/call" &&
        isRecord(message.params) &&
        isRecord(message.params.arguments) &&
        message.params.arguments.text === text,
    );
}

/** `raw` (name, value, … as sent) with the headers named in `drop` left out, and `add` appended. */
function headersWith(raw: readonly string[], drop: readonly string[], add: string[] = []): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (!drop.includes((raw[i] as string).toLowerCase())) out.push(raw[i] as string, raw[i + 1] as string);
  return [...out, ...add];
}

/** The fixed answer to anything but a fresh credential on the internal listener: the listener's own 403. */
function expectRefused(answer: { status: number; text: string }, what: string): void {
  expect(answer.status, `${what}: ${answer.status} ${answer.text.slice(0, 300)}`).toBe(403);
  const body = JSON.parse(answer.text) as { error?: { data?: { reason?: unknown } } };
  expect(body.error?.data?.reason).toBe("not_a_replica");
}

/** Sends one echo call on `session` to the other replica (forwarded to the owner); returns what was forwarded. */
async function forwardedEcho(session: Record<string, string>, text: string): Promise<CapturedRequest> {
  const answer = await rpc(other.url, echoCall(7, text), session);
  expect(answer.status, JSON.stringify(answer.message)).toBe(200);
  expect(textOf(answer.message)).toBe(text);
  return capturedWith(text);
}

describe("the forwarding credential does not leak to the upstream", () => {
  // Attack stopped: the owner proxies a forwarded request upstream with the client's headers, the replicas'
  // credential among them, so an upstream (a third party's MCP server) learns a credential that opens every
  // replica's internal listener for the next 60 s (and, with it, the replay below).
  it("a request forwarded to a session's owner reaches the upstream without mcp-gateway-forwarded", async () => {
    const session = await taskSession();
    const before = upstream.exchanges.length;
    const list = await rpc(other.url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, session);
    expect(list.status, JSON.stringify(list.message)).toBe(200);
    const result = list.message?.result;
    expect(isRecord(result) && Array.isArray(result.tools) ? result.tools.map((t: Json) => t.name) : []).toContain(
      "echo",
    );
    // It was forwarded to the owner (the other replica does not hold the session)…
    const hop = capture.captured.find(
      (r) => r.headers["mcp-session-id"] === session["mcp-session-id"] && r.body.toString().includes("tools/list"),
    );
    expect(hop, "the tools/list forwarded to the owner").toBeDefined();
    // A tools/call through the other replica too (passed through on the task session).
    await forwardedEcho(session, "finding-4a-call");
    expect(upstreamEchoes("finding-4a-call")).toHaveLength(1);
    // …and the upstream saw the session's requests.
    const seen = upstream.exchanges.slice(before);
    expect(
      seen.some(
        (e) =>
          e.sessionId === session["mcp-session-id"] && e.messages.some((m) => isRecord(m) && m.method === "tools/list"),
      ),
    ).toBe(true);
    // Not one request the upstream ever received carries the credential.
    const leaked = upstream.exchanges
      .filter((e) => Object.keys(e.headers).some(isCredentialHeader))
      .map((e) => ({
        methods: e.messages.map((m) => (isRecord(m) ? m.method : undefined)),
        headers: Object.fromEntries(Object.entries(e.headers).filter(([name]) => isCredentialHeader(name))),
      }));
    expect(leaked).toEqual([]);
  });
});

describe("a captured forwarding credential is good for the one request it was made for", () => {
  // Attack stopped: whoever sees one forwarded request (on the network between replicas, or an upstream it leaked
  // to) sends it again, as it was, at the owner's internal listener: today it is accepted for 60 s, served as a
  // request from a replica (no rate limits), and the tool runs again.
  it("the captured request replayed verbatim at the owner's internal listener is refused 403", async () => {
    const session = await taskSession();
    const captured = await forwardedEcho(session, "finding-4b-verbatim");
    expect(upstreamEchoes("finding-4b-verbatim")).toHaveLength(1);

    const replay = await sendRaw(internal, captured);
    expectRefused(replay, "the verbatim replay");
    // Nor did the tool run a second time.
    expect(upstreamEchoes("finding-4b-verbatim")).toHaveLength(1);
  });

  // Attack stopped: the credential lifted off one forwarded request carries a request of the attacker's choosing
  // (another call, another session's id, any body) into the internal listener.
  it("the captured credential on another body is refused 403", async () => {
    const session = await taskSession();
    const captured = await forwardedEcho(session, "finding-4b-original");
    const body = Buffer.from(JSON.stringify(echoCall(8, "finding-4b-injected")));
    const replay = await sendRaw(internal, {
      method: captured.method,
      path: captured.path,
      rawHeaders: headersWith(captured.rawHeaders, ["content-length"], ["content-length", String(body.length)]),
      body,
    });
    expectRefused(replay, "the credential on another body");
    expect(upstreamEchoes("finding-4b-injected")).toEqual([]);
  });

  // Attack stopped: the credential opens the internal listener's whole app, not just the forwarded route: the
  // operator page, every upstream's route, other methods.
  it("the captured credential on another path (GET /status.json) is refused 403", async () => {
    const session = await taskSession();
    const captured = await forwardedEcho(session, "finding-4b-path");
    const replay = await sendRaw(internal, {
      method: "GET",
      path: "/status.json",
      rawHeaders: headersWith(captured.rawHeaders, ["content-length", "content-type", "transfer-encoding"]),
      body: "",
    });
    expectRefused(replay, "the credential on GET /status.json");
  });
});
