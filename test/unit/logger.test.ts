import { describe, expect, it } from "vitest";
import { context, propagation, trace } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { createLogger, redactUrl, REDACTED, type LogFields } from "../../src/log/logger.js";
import type { LogLevel } from "../../src/config/schema.js";
import { eachInTurn, longestHold } from "../helpers/event-loop.js";

const FIXED = new Date("2025-01-02T03:04:05.678Z");

function capture(level: LogLevel) {
  const lines: string[] = [];
  const log = createLogger(
    level,
    (line) => lines.push(line),
    () => FIXED,
  );
  const emitAll = (): void => {
    log.error("e");
    log.warn("w");
    log.info("i");
    log.debug("d");
  };
  return { lines, log, emitAll };
}

function messages(lines: readonly string[]): string[] {
  return lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
}

describe("createLogger", () => {
  it.each([
    ["silent", []],
    ["error", ["e"]],
    ["warn", ["e", "w"]],
    ["info", ["e", "w", "i"]],
    ["debug", ["e", "w", "i", "d"]],
  ] as const)("level %s emits %j", (level, expected) => {
    const { lines, log, emitAll } = capture(level);
    emitAll();
    expect(messages(lines)).toEqual(expected);
    expect(log.level).toBe(level);
  });

  it("writes one JSON object per line with time, level, message and fields", () => {
    const { lines, log } = capture("debug");
    log.warn("upstream request failed", {
      method: "POST",
      status: 502,
      retried: false,
      extra: null,
      skipped: undefined,
    });
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toContain("\n");
    expect(JSON.parse(line)).toEqual({
      time: "2025-01-02T03:04:05.678Z",
      level: "warn",
      msg: "upstream request failed",
      method: "POST",
      status: 502,
      retried: false,
      extra: null,
    });
  });

  it("keeps a message with newlines on one line", () => {
    const { lines, log } = capture("info");
    log.info("two\nlines", { detail: "a\r\nb" });
    expect(lines).toHaveLength(1);
    expect((lines[0] ?? "").split("\n")).toHaveLength(2);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ msg: "two\nlines", detail: "a\r\nb" });
  });

  it("does not let fields overwrite time, level or msg", () => {
    const { lines, log } = capture("info");
    log.info("real message", { time: "forged", level: "error", msg: "forged" });
    expect(JSON.parse(lines[0] ?? "")).toEqual({
      time: "2025-01-02T03:04:05.678Z",
      level: "info",
      msg: "real message",
    });
  });

  it("labels each line with the level it was emitted at", () => {
    const { lines, emitAll } = capture("debug");
    emitAll();
    expect(lines.map((l) => (JSON.parse(l) as { level: string }).level)).toEqual(["error", "warn", "info", "debug"]);
  });
});

describe("redactUrl", () => {
  it("strips userinfo, query and fragment, keeping scheme, host, port and path", () => {
    expect(redactUrl("https://alice:hunter2@mcp.example.com:8443/v1/mcp?token=SECRET&x=1#frag")).toBe(
      "https://mcp.example.com:8443/v1/mcp",
    );
    expect(redactUrl("http://user@127.0.0.1:3001/mcp?api_key=k")).toBe("http://127.0.0.1:3001/mcp");
  });

  it("accepts URL objects", () => {
    expect(redactUrl(new URL("http://u:p@[::1]:9/x?y=z"))).toBe("http://[::1]:9/x");
  });

  it("leaves a URL without secrets as it is (default port dropped, root path kept)", () => {
    expect(redactUrl("https://mcp.example.com:443/")).toBe("https://mcp.example.com/");
    expect(redactUrl("http://127.0.0.1:3001/mcp")).toBe("http://127.0.0.1:3001/mcp");
  });

  it("never echoes an unparsable input, which could itself be a secret", () => {
    expect(redactUrl("not a url with secret-token")).toBe("(invalid url)");
  });
});

describe("redaction (pino redact paths and scrubbing)", () => {
  const SECRET = "s3cr3t-VALUE-0123456789";

  function lineOf(fields: Record<string, unknown>, msg = "m"): { raw: string; parsed: Record<string, unknown> } {
    const { lines, log } = capture("debug");
    log.info(msg, fields as LogFields);
    const raw = lines[0] ?? "";
    return { raw, parsed: JSON.parse(raw) as Record<string, unknown> };
  }

  it.each([
    "authorization",
    "Authorization",
    "proxy-authorization",
    "cookie",
    "Cookie",
    "set-cookie",
    "token",
    "access_token",
    "accessToken",
    "refresh_token",
    "id_token",
    "client_secret",
    "password",
    "api_key",
    "apiKey",
    "x-api-key",
    "X-Api-Key",
    "secret",
  ])("never writes the value of a %s field", (key) => {
    const { raw, parsed } = lineOf({ [key]: SECRET, kept: "visible" });
    expect(raw).not.toContain(SECRET);
    expect(parsed[key]).toBe(REDACTED);
    expect(parsed.kept).toBe("visible");
  });

  it("redacts secret keys one level down (headers objects)", () => {
    const { raw, parsed } = lineOf({
      headers: { authorization: `Bearer ${SECRET}`, cookie: SECRET, "x-api-key": SECRET, accept: "text/html" },
    });
    expect(raw).not.toContain(SECRET);
    expect(parsed.headers).toEqual({
      authorization: REDACTED,
      cookie: REDACTED,
      "x-api-key": REDACTED,
      accept: "text/html",
    });
  });

  it("cuts URL userinfo, query and fragment from every string field and from the message", () => {
    const { raw, parsed } = lineOf(
      {
        upstream: `https://alice:${SECRET}@mcp.example.com:8443/v1/mcp?token=${SECRET}&x=1#${SECRET}`,
        cause: `connect ECONNREFUSED http://u:${SECRET}@10.0.0.1:3001/mcp?api_key=${SECRET} (retrying)`,
        store: `redis://:${SECRET}@cache:6379/0`,
      },
      `fetching https://bob:${SECRET}@example.com/keys?sig=${SECRET}`,
    );
    expect(raw).not.toContain(SECRET);
    expect(parsed.upstream).toBe("https://mcp.example.com:8443/v1/mcp");
    expect(parsed.cause).toBe("connect ECONNREFUSED http://10.0.0.1:3001/mcp (retrying)");
    expect(parsed.store).toBe("redis://cache:6379/0");
    expect(parsed.msg).toBe("fetching https://example.com/keys");
  });

  it("cuts URLs in time linear in the text, whatever it holds", async () => {
    // Text the former URL pattern backtracked on: runs of scheme characters, each a possible start (19 ms per 4 KB).
    const crafted = ["a.", "a-", "x://", "a.b://", "bearer-", "a+"].map(
      (unit) => `${unit.repeat(Math.ceil(40_000 / unit.length))} https://u:${SECRET}@h/?k=${SECRET}`,
    );
    const { lines, log } = capture("debug");
    const held = await longestHold(eachInTurn(crafted, (text) => log.info(text, { cause: text })));
    expect(held.cpuMs, `the event loop was held for ${held.wallMs.toFixed(0)} ms`).toBeLessThan(100);
    expect(lines).toHaveLength(crafted.length);
    for (const line of lines) expect(line).not.toContain(SECRET);
  });

  it("cuts the credentials after Bearer/Basic wherever they appear in text", () => {
    const { raw, parsed } = lineOf({
      cause: `upstream refused Bearer ${SECRET}`,
      detail: `Authorization: Basic ${Buffer.from(`u:${SECRET}`).toString("base64")}`,
    });
    expect(raw).not.toContain(SECRET);
    expect(raw).not.toContain(Buffer.from(`u:${SECRET}`).toString("base64"));
    expect(parsed.cause).toBe(`upstream refused Bearer ${REDACTED}`);
  });

  it("leaves ordinary text, numbers and booleans alone", () => {
    const { parsed } = lineOf({
      method: "tools/call",
      status: 502,
      retried: false,
      note: "token bucket empty",
      path: "/mcp",
    });
    expect(parsed).toMatchObject({
      method: "tools/call",
      status: 502,
      retried: false,
      note: "token bucket empty",
      path: "/mcp",
    });
  });

  it("writes trace_id and span_id of the active span (tracing on), and nothing without one", async () => {
    // An SDK registered as the gateway registers it: its AsyncLocalStorage context is what the logger reads.
    const provider = new NodeTracerProvider();
    provider.register();
    try {
      const { lines, log } = capture("info");
      log.info("outside");
      const ids = provider.getTracer("logger-test").startActiveSpan("request", (span) => {
        log.info("inside", { trace_id: "a field cannot forge it" });
        span.end();
        return span.spanContext();
      });
      expect(JSON.parse(lines[0] ?? "")).toEqual({ time: FIXED.toISOString(), level: "info", msg: "outside" });
      expect(JSON.parse(lines[1] ?? "")).toEqual({
        time: FIXED.toISOString(),
        level: "info",
        msg: "inside",
        trace_id: ids.traceId,
        span_id: ids.spanId,
      });
    } finally {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    }
  });
});
