import { describe, expect, it } from "vitest";
import { ArgvSyntaxError, splitCommand } from "../../src/config/argv.js";
import { configFromFlags } from "../../src/config/load.js";
import { ConfigError, parseConfig } from "../../src/config/validate.js";
import { childEnv, commandLabel } from "../../src/stdio/command.js";
import { redactLine } from "../../src/log/redact.js";
import { LineReader, LineTooLongError, parseLine } from "../../src/stdio/framing.js";
import { BoundedEventStore } from "../../src/stdio/event-store.js";

describe("splitCommand (shell-like, no shell)", () => {
  it.each([
    [
      "npx -y @modelcontextprotocol/server-filesystem /data",
      ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"],
    ],
    ["  a   b\tc\n", ["a", "b", "c"]],
    [
      'docker run -i --rm \'my image\' "with \\"quotes\\""',
      ["docker", "run", "-i", "--rm", "my image", 'with "quotes"'],
    ],
    ["a\\ b c\\\\d", ["a b", "c\\d"]],
    ["'' \"\" x", ["", "", "x"]],
    ["pre'fix 'mid\"dle\"post", ["prefix middlepost"]],
    ['"keep \\n and \\$HOME"', ["keep \\n and $HOME"]],
    ["'$HOME' ~ *.txt a|b;c&d", ["$HOME", "~", "*.txt", "a|b;c&d"]],
    ["line \\\ncontinued", ["line", "continued"]],
    ["", []],
  ])("%j", (line, argv) => {
    expect(splitCommand(line)).toEqual(argv);
  });

  it.each([["'open"], ['"open'], ["trailing\\"]])("rejects %j", (line) => {
    expect(() => splitCommand(line)).toThrow(ArgvSyntaxError);
  });

  it("turns --upstream-command into upstream.command, and a syntax error into a field-named ConfigError", () => {
    expect(configFromFlags({ "upstream-command": "node 'my server.js' --flag" })).toEqual({
      upstream: { command: ["node", "my server.js", "--flag"] },
    });
    expect(() => configFromFlags({ "upstream-command": "node 'oops" })).toThrow(ConfigError);
    try {
      configFromFlags({ "upstream-command": "node 'oops" });
    } catch (err) {
      expect((err as ConfigError).problems).toEqual(["upstream.command: unclosed single quote at character 6"]);
    }
  });
});

describe("config: exactly one of upstream.url and upstream.command", () => {
  const problems = (input: unknown): readonly string[] => {
    try {
      parseConfig(input);
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };
  it("accepts a command alone, with its defaults", () => {
    const config = parseConfig({ upstream: { command: ["npx", "-y", "x"] } });
    expect(config.upstream).toMatchObject({
      command: ["npx", "-y", "x"],
      inheritEnv: ["PATH", "HOME"],
      env: {},
      maxProcesses: 32,
    });
    expect(config.upstream?.url).toBeUndefined();
  });
  it("refuses both, and neither", () => {
    expect(problems({ upstream: { url: "http://127.0.0.1:1/mcp", command: ["x"] } })).toEqual([
      "upstream.command: set upstream.url (--upstream) or upstream.command (--upstream-command), not both",
    ]);
    expect(problems({ upstream: {} })).toEqual(["upstream.url: is required (or upstream.command, for a stdio server)"]);
    expect(problems({ upstream: { command: [] } })).toHaveLength(1);
  });
  it("warmProcesses: 0 by default, a stdio upstream's only, and within maxProcesses", () => {
    expect(parseConfig({ upstream: { command: ["x"] } }).upstream?.warmProcesses).toBe(0);
    expect(parseConfig({ upstream: { command: ["x"], warmProcesses: 2, maxProcesses: 2 } }).upstream).toMatchObject({
      warmProcesses: 2,
    });
    expect(problems({ upstream: { url: "http://127.0.0.1:1/mcp", warmProcesses: 1 } })).toEqual([
      "upstream.warmProcesses: needs a stdio upstream (upstream.command)",
    ]);
    expect(problems({ upstream: { command: ["x"], warmProcesses: 3, maxProcesses: 2 } })).toEqual([
      "upstream.warmProcesses: must not exceed upstream.maxProcesses (2): warm processes count within it",
    ]);
  });
});

describe("stdio command: label, environment, redaction", () => {
  it("names the command with secrets redacted", () => {
    expect(commandLabel(["npx", "-y", "@modelcontextprotocol/server-everything"])).toBe(
      "stdio: npx -y @modelcontextprotocol/server-everything",
    );
    expect(
      commandLabel([
        "srv",
        "--api-key",
        "k-123",
        "--token=abc",
        "GITHUB_TOKEN=ghp_x",
        "https://u:p@h.example/x?key=1",
        "a b",
      ]),
    ).toBe('stdio: srv --api-key *** --token=*** GITHUB_TOKEN=*** https://***@h.example/x?*** "a b"');
  });
  it("redacts a credential passed as a header argument (mcp-remote), a bare token and a JWT", () => {
    const label = commandLabel([
      "npx",
      "mcp-remote",
      "https://mcp.example.com/sse",
      "--header",
      "Authorization: Bearer s3cr3t-value-123",
      "--header=Authorization:Basic dXNlcjpwYXNz",
      "ghp_abcdefghijklmnopqrstuv",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    ]);
    for (const secret of ["s3cr3t-value-123", "dXNlcjpwYXNz", "ghp_abcdefghijklmnopqrstuv", "eyJzdWIiOiIxIn0"])
      expect(label).not.toContain(secret);
    expect(label).toContain("stdio: npx mcp-remote https://mcp.example.com/sse --header");
  });
  it("inherits only the named variables, then adds upstream.env", () => {
    const parent = { PATH: "/bin", HOME: "/home/x", AWS_SECRET_ACCESS_KEY: "nope", LANG: "C" };
    expect(childEnv({ inheritEnv: ["PATH", "HOME"], env: { DEBUG: "1" }, cwd: undefined }, parent)).toEqual({
      PATH: "/bin",
      HOME: "/home/x",
      DEBUG: "1",
    });
    expect(childEnv({ inheritEnv: ["PATH", "MISSING"], env: { PATH: "/opt/bin" }, cwd: undefined }, parent)).toEqual({
      PATH: "/opt/bin",
    });
  });
  it("redacts credentials in stderr lines", () => {
    const line = redactLine(
      "auth failed: API_TOKEN=sk-live-abcdefghijklmnop Authorization: Bearer abc.def password: hunter2 https://me:pw@x.io/?t=1",
    );
    for (const secret of ["sk-live-abcdefghijklmnop", "abc.def", "hunter2", "me:pw", "t=1"])
      expect(line).not.toContain(secret);
    expect(line).toContain("auth failed");
  });
});

describe("NDJSON framing", () => {
  it("splits lines across chunks and strips CR", () => {
    const reader = new LineReader(1_000);
    expect(reader.push(Buffer.from('{"a":1}\n{"b"'))).toEqual(['{"a":1}']);
    expect(reader.push(Buffer.from(":2}\r\n\n"))).toEqual(['{"b":2}', ""]);
    expect(reader.pending).toBe(0);
  });
  it("refuses a line over the limit, complete or not", () => {
    expect(() => new LineReader(8).push(Buffer.from("123456789\n"))).toThrow(LineTooLongError);
    const reader = new LineReader(8);
    reader.push(Buffer.from("12345"));
    expect(() => reader.push(Buffer.from("6789"))).toThrow(LineTooLongError);
  });
  it("classifies lines", () => {
    expect(parseLine('{"jsonrpc":"2.0","id":1,"result":{}}').kind).toBe("message");
    expect(parseLine('{"jsonrpc":"2.0","method":"notifications/progress"}').kind).toBe("message");
    expect(parseLine("   ")).toEqual({ kind: "blank" });
    expect(parseLine("Server started")).toEqual({ kind: "garbage", why: "not JSON" });
    expect(parseLine("[1]")).toEqual({ kind: "garbage", why: "not a JSON-RPC message object" });
    expect(parseLine('{"id":1}')).toEqual({ kind: "garbage", why: 'no "jsonrpc": "2.0"' });
  });
});

describe("BoundedEventStore", () => {
  const msg = (n: number) => ({ jsonrpc: "2.0" as const, method: "notifications/message", params: { n } });
  it("replays a stream's events after the last one seen, and only that stream's", async () => {
    const store = new BoundedEventStore(1_000_000);
    const a1 = await store.storeEvent("A", msg(1));
    await store.storeEvent("B", msg(2));
    await store.storeEvent("A", msg(3));
    const replayed: unknown[] = [];
    expect(await store.replayEventsAfter(a1, { send: async (_id, m) => void replayed.push(m) })).toBe("A");
    expect(replayed).toEqual([msg(3)]);
    expect(await store.getStreamIdForEventId(a1)).toBe("A");
    expect(await store.getStreamIdForEventId("bogus")).toBeUndefined();
  });
  it("forgets the oldest events beyond its byte budget", async () => {
    const store = new BoundedEventStore(300);
    const first = await store.storeEvent("A", msg(0));
    for (let i = 1; i <= 20; i++) await store.storeEvent("A", msg(i));
    const replayed: unknown[] = [];
    await store.replayEventsAfter(first, { send: async (_id, m) => void replayed.push(m) });
    expect(replayed.length).toBeGreaterThan(0);
    expect(replayed.length).toBeLessThan(20);
    expect(replayed.at(-1)).toEqual(msg(20));
  });
  it("lets go of evicted messages at once, so its memory is its byte budget", async () => {
    const store = new BoundedEventStore(10_000);
    const big = (n: number) => ({
      jsonrpc: "2.0" as const,
      method: "notifications/message",
      params: { n, data: "x".repeat(5_000) },
    });
    for (let i = 0; i < 500; i++) await store.storeEvent("A", big(i));
    const held = (store as unknown as { events: ({ message: unknown } | undefined)[] }).events.filter(
      (e) => e !== undefined,
    );
    expect(held.length).toBeLessThanOrEqual(2);
  });
  it("replays a consistent snapshot while events are stored (and evicted, and compacted) during the replay", async () => {
    const store = new BoundedEventStore(400);
    const first = await store.storeEvent("A", msg(0));
    for (let i = 1; i <= 3; i++) await store.storeEvent("A", msg(i));
    const replayed: unknown[] = [];
    await store.replayEventsAfter(first, {
      send: async (_id, m) => {
        replayed.push(m);
        for (let i = 0; i < 3_000; i++) await store.storeEvent("B", msg(1_000 + i));
      },
    });
    expect(replayed.length).toBeGreaterThan(0);
    expect(replayed.every((m) => (m as { params: { n: number } }).params.n < 1_000)).toBe(true);
  });
});
