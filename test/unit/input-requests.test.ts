import { describe, expect, it } from "vitest";
import { inputRequestFor, type InputRequestMapping } from "../../src/protocol/input-requests.js";

type Json = Record<string, unknown>;

function upstreamRequest(method: string, params?: Json): Json {
  return params === undefined ? { jsonrpc: "2.0", id: 3, method } : { jsonrpc: "2.0", id: 3, method, params };
}

function ok(m: InputRequestMapping): Json {
  if (m.kind !== "ok") throw new Error(`expected ok, got ${m.reason}`);
  return m.request;
}

function reason(m: InputRequestMapping): string {
  if (m.kind !== "unsupported") throw new Error("expected unsupported");
  return m.reason;
}

const FORM = { message: "Your name?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } };
const URL_MODE = { mode: "url", message: "Sign in", url: "https://example.com/auth", elicitationId: "e-1" };
const SAMPLING = { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 10 };

describe("inputRequestFor: elicitation", () => {
  it("form mode is allowed by an empty elicitation capability or by elicitation.form", () => {
    for (const caps of [{ elicitation: {} }, { elicitation: { form: {} } }, { elicitation: { form: {}, url: {} } }]) {
      expect(ok(inputRequestFor(upstreamRequest("elicitation/create", FORM), caps))).toEqual({
        method: "elicitation/create",
        params: FORM,
      });
    }
    expect(
      ok(inputRequestFor(upstreamRequest("elicitation/create", { ...FORM, mode: "form" }), { elicitation: {} })),
    ).toEqual({
      method: "elicitation/create",
      params: { ...FORM, mode: "form" },
    });
  });

  it("form mode is refused without elicitation, or with url only", () => {
    expect(reason(inputRequestFor(upstreamRequest("elicitation/create", FORM), {}))).toBe(
      "the client did not declare elicitation",
    );
    expect(inputRequestFor(upstreamRequest("elicitation/create", FORM), { elicitation: { url: {} } }).kind).toBe(
      "unsupported",
    );
    expect(inputRequestFor(upstreamRequest("elicitation/create", FORM), { elicitation: true }).kind).toBe(
      "unsupported",
    );
  });

  it("url mode needs elicitation.url, and elicitationId is stripped", () => {
    expect(reason(inputRequestFor(upstreamRequest("elicitation/create", URL_MODE), { elicitation: {} }))).toBe(
      "the client did not declare elicitation.url",
    );
    expect(inputRequestFor(upstreamRequest("elicitation/create", URL_MODE), { elicitation: { form: {} } }).kind).toBe(
      "unsupported",
    );
    const request = ok(inputRequestFor(upstreamRequest("elicitation/create", URL_MODE), { elicitation: { url: {} } }));
    expect(request).toEqual({
      method: "elicitation/create",
      params: { mode: "url", message: "Sign in", url: "https://example.com/auth" },
    });
  });

  it("strips elicitationId from form requests too, without touching the input", () => {
    const message = upstreamRequest("elicitation/create", { ...FORM, elicitationId: "x" });
    expect(ok(inputRequestFor(message, { elicitation: {} })).params).toEqual(FORM);
    expect((message.params as Json).elicitationId).toBe("x");
  });

  it("produces a de-JSON-RPC'd entry: no jsonrpc, no id", () => {
    const request = ok(inputRequestFor(upstreamRequest("elicitation/create", FORM), { elicitation: {} }));
    expect(request).not.toHaveProperty("id");
    expect(request).not.toHaveProperty("jsonrpc");
  });
});

describe("inputRequestFor: sampling", () => {
  it("needs sampling", () => {
    expect(reason(inputRequestFor(upstreamRequest("sampling/createMessage", SAMPLING), {}))).toBe(
      "the client did not declare sampling",
    );
    expect(ok(inputRequestFor(upstreamRequest("sampling/createMessage", SAMPLING), { sampling: {} }))).toEqual({
      method: "sampling/createMessage",
      params: SAMPLING,
    });
  });

  it("tools or toolChoice additionally need sampling.tools", () => {
    const withTools = { ...SAMPLING, tools: [{ name: "t", inputSchema: { type: "object" } }] };
    const withChoice = { ...SAMPLING, toolChoice: { mode: "auto" } };
    for (const params of [withTools, withChoice]) {
      expect(reason(inputRequestFor(upstreamRequest("sampling/createMessage", params), { sampling: {} }))).toBe(
        "the client did not declare sampling.tools",
      );
      expect(
        reason(inputRequestFor(upstreamRequest("sampling/createMessage", params), { sampling: { context: {} } })),
      ).toBe("the client did not declare sampling.tools");
      expect(
        ok(inputRequestFor(upstreamRequest("sampling/createMessage", params), { sampling: { tools: {} } })).params,
      ).toEqual(params);
    }
  });
});

describe("inputRequestFor: roots", () => {
  it("needs roots, and carries no params", () => {
    expect(reason(inputRequestFor(upstreamRequest("roots/list"), { sampling: {} }))).toBe(
      "the client did not declare roots",
    );
    expect(ok(inputRequestFor(upstreamRequest("roots/list"), { roots: {} }))).toEqual({ method: "roots/list" });
    expect(ok(inputRequestFor(upstreamRequest("roots/list", { _meta: { x: 1 } }), { roots: {} }))).toEqual({
      method: "roots/list",
    });
  });
});

describe("inputRequestFor: other methods", () => {
  it("anything else is unsupported, whatever the client declared", () => {
    const all = { elicitation: {}, sampling: { tools: {} }, roots: {} };
    for (const method of ["ping", "tasks/get", "notifications/message", "elicitation/complete", "custom/thing"]) {
      expect(reason(inputRequestFor(upstreamRequest(method), all))).toBe(
        `the gateway cannot relay ${method} to a modern client`,
      );
    }
    expect(inputRequestFor({ id: 1 }, all).kind).toBe("unsupported");
  });
});
