// Stops: walking around access rules and rate limits with a body the gateway cannot parse (issue 33, finding 1).
//
// The attack: a POST whose Content-Type the gateway does not take for JSON (`application/jsonp, application/json`,
// `text/plain`) and whose body JSON.parse refuses (a bare `NaN`) is passed to the upstream unchecked, since the
// gateway cannot read the call in it. Real MCP upstreams read such a body anyway: the Python SDK's Streamable HTTP
// transport splits Content-Type on commas (so `application/jsonp, application/json` is JSON to it) and parses with
// pydantic_core.from_json, which accepts NaN. The upstream here does the same, and records what reaches it.
// Fixed behaviour: under access rules or rate limits such a POST is refused with 415 and
// data.reason "unsupported_media_type", and never reaches the upstream; a JSON content type with a body that does
// not parse stays 400 -32700; without any access rules or limits a non-JSON body still passes through untouched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerResponse } from "node:http";
import { startScriptedUpstream, type RecordedRequest, type ScriptedUpstream } from "../helpers/scripted-upstream.js";
import { startTestGateway, type TestGateway, type TestGatewayOverrides } from "../helpers/gateway.js";
import { MCP_ACCEPT } from "../helpers/http.js";

/** Content types the gateway does not take for JSON; the first one is JSON to the Python SDK's transport. */
const NON_JSON_TYPES = ["application/jsonp, application/json", "text/plain"];
const DENIED = "secret_admin";

/** A JSON-RPC tools/call whose arguments hold a bare NaN: not JSON to JSON.parse, JSON to pydantic_core.from_json. */
function nanCall(id: number, tool: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":{"limit":NaN}}}`;
}

/** The same call in well-formed JSON. */
function plainCall(id: number, tool: string): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: tool, arguments: { limit: 1 } } });
}

/** Reads JSON as a lenient server does (pydantic_core.from_json, Python's json.loads): NaN and ±Infinity are numbers. */
function lenientParse(text: string): unknown {
  return JSON.parse(text.replace(/(?<=[:,[]\s*)-?(?:NaN|Infinity)(?=\s*[,}\]])/g, "null"));
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/**
 * An upstream that would happily run what it is sent: whatever the Content-Type, it reads the body leniently and
 * "runs" the tool a tools/call names. It records every request (scripted-upstream.ts).
 */
function startLenientUpstream(): Promise<ScriptedUpstream> {
  return startScriptedUpstream((_req, res, recorded) => {
    let message: unknown;
    try {
      message = lenientParse(recorded.body);
    } catch {
      answer(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
      return;
    }
    const m = message as { id?: unknown; method?: string; params?: { name?: string } };
    const result =
      m.method === "tools/call"
        ? { content: [{ type: "text", text: `ran ${m.params?.name ?? "?"}` }] }
        : m.method === "tools/list"
          ? { tools: [] }
          : {};
    answer(res, 200, { jsonrpc: "2.0", id: m.id ?? null, result });
  });
}

function post(url: string, contentType: string, body: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": contentType, accept: MCP_ACCEPT, "mcp-protocol-version": "2025-06-18" },
    body,
  });
}

interface Answer {
  status: number;
  body: { error?: { code?: unknown; data?: Record<string, unknown> }; result?: unknown };
  text: string;
}

async function read(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: Answer["body"] = {};
  try {
    body = JSON.parse(text) as Answer["body"];
  } catch {
    // not JSON: the assertions on `body` then fail, and `text` says what came back
  }
  return { status: res.status, body, text };
}

/** Requests the upstream received whose body names `marker`. */
function reaching(upstream: ScriptedUpstream, marker: string): RecordedRequest[] {
  return upstream.requests.filter((r) => r.body.includes(marker));
}

function expectUnsupportedMediaType(a: Answer): void {
  expect(a.status, a.text).toBe(415);
  expect(a.body, a.text).toMatchObject({
    error: { code: expect.any(Number), data: { reason: "unsupported_media_type" } },
  });
}

/** A lenient upstream and a gateway in front of it (legacy era: no probe), for one describe block. */
function setup(overrides: TestGatewayOverrides): { upstream: () => ScriptedUpstream; gateway: () => TestGateway } {
  let upstream: ScriptedUpstream | undefined;
  let gateway: TestGateway | undefined;
  beforeAll(async () => {
    upstream = await startLenientUpstream();
    gateway = await startTestGateway(upstream.url, { upstream: { era: "legacy" }, ...overrides });
  });
  afterAll(async () => {
    await gateway?.close(0);
    await upstream?.close();
  });
  return { upstream: () => upstream as ScriptedUpstream, gateway: () => gateway as TestGateway };
}

describe("under access rules (secret_* denied)", () => {
  const env = setup({ access: { default: "allow", rules: [{ tools: "secret_*", effect: "deny" }] } });

  it("the upstream itself runs a denied call sent with a NaN body and a non-JSON type (the gateway is the only guard)", async () => {
    const direct = await read(await post(env.upstream().url, NON_JSON_TYPES[0] as string, nanCall(1, "direct_probe")));
    expect(direct.body).toMatchObject({ result: { content: [{ type: "text", text: "ran direct_probe" }] } });
  });

  it("a denied tools/call with a non-JSON Content-Type never reaches the upstream: 415 unsupported_media_type", async () => {
    const answers: Answer[] = [];
    let id = 10;
    for (const type of NON_JSON_TYPES) {
      for (const body of [nanCall(id++, DENIED), plainCall(id++, DENIED)]) {
        answers.push(await read(await post(env.gateway().url, type, body)));
      }
    }
    // The attack: the denied tool reached (and ran on) the upstream.
    expect(reaching(env.upstream(), DENIED).map((r) => `${r.headers["content-type"]} ${r.body}`)).toEqual([]);
    for (const a of answers) expect(a.text).not.toContain(`ran ${DENIED}`);
    for (const a of answers) expectUnsupportedMediaType(a);
  });

  it("a JSON Content-Type with a body that does not parse (NaN) is 400 -32700 and never reaches the upstream", async () => {
    for (const type of ["application/json", "application/json; charset=utf-8"]) {
      const a = await read(await post(env.gateway().url, type, nanCall(30, "secret_parse")));
      expect(a.status, a.text).toBe(400);
      expect(a.body.error?.code).toBe(-32700);
    }
    expect(reaching(env.upstream(), "secret_parse")).toEqual([]);
  });

  it("an allowed call in plain JSON still reaches the upstream", async () => {
    const a = await read(await post(env.gateway().url, "application/json", plainCall(40, "echo_allowed")));
    expect(a.body, a.text).toMatchObject({ result: { content: [{ type: "text", text: "ran echo_allowed" }] } });
    expect(reaching(env.upstream(), "echo_allowed")).toHaveLength(1);
  });
});

describe("under a rate limit (2 calls per caller)", () => {
  const env = setup({ limits: { rules: [{ name: "two", tool: "limited_*", requests: 2, perMs: 600_000 }] } });

  it("5 calls with a non-JSON Content-Type and a NaN body: the upstream sees none of them, each is 415", async () => {
    for (const type of NON_JSON_TYPES) {
      const tool = `limited_${type === "text/plain" ? "plain" : "jsonp"}`;
      const answers: Answer[] = [];
      for (let i = 0; i < 5; i++) answers.push(await read(await post(env.gateway().url, type, nanCall(50 + i, tool))));
      // The attack: all 5 reached the upstream, over a limit of 2.
      expect(reaching(env.upstream(), tool).length, `calls of ${tool} (${type}) that reached the upstream`).toBe(0);
      for (const a of answers) expectUnsupportedMediaType(a);
    }
  });
});

describe("without access rules or limits (a plain proxy)", () => {
  const env = setup({});

  it("a body with a non-JSON Content-Type is passed to the upstream untouched, as before", async () => {
    let id = 60;
    for (const type of NON_JSON_TYPES) {
      for (const body of [nanCall(id++, "anything"), plainCall(id++, "anything")]) {
        const before = env.upstream().requests.length;
        const a = await read(await post(env.gateway().url, type, body));
        expect(a.status, a.text).toBe(200);
        expect(a.body).toMatchObject({ result: { content: [{ type: "text", text: "ran anything" }] } });
        const got = env.upstream().requests.slice(before);
        expect(got).toHaveLength(1);
        expect(got[0]?.body).toBe(body);
        expect(got[0]?.headers["content-type"]).toBe(type);
      }
    }
  });
});
