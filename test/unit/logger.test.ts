import { describe, expect, it } from "vitest";
import { createLogger, redactUrl } from "../../src/log/logger.js";
import type { LogLevel } from "../../src/config/schema.js";

const FIXED = new Date("2025-01-02T03:04:05.678Z");

function capture(level: LogLevel) {
  const lines: string[] = [];
  const log = createLogger(level, (line) => lines.push(line), () => FIXED);
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
    log.warn("upstream request failed", { method: "POST", status: 502, retried: false, extra: null, skipped: undefined });
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
    expect(JSON.parse(lines[0] ?? "")).toEqual({ time: "2025-01-02T03:04:05.678Z", level: "info", msg: "real message" });
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
