// The catalog's pure parts (issue 36): overrides (catalog/overrides.ts), the validator and its bounds
// (catalog/validator.ts), and the config's checks of renames (config/catalog.ts), including the attacker's cases:
// a pinned argument smuggled under another case or Unicode form, the upstream's own name after a rename, schemas
// whose $ref or composition would cost the gateway without bound, and oversized arguments.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT_OK, EXIT_USAGE, runCli } from "../../src/cli.js";
import { ToolCatalog } from "../../src/catalog/overrides.js";
import { RouteCatalog } from "../../src/catalog/route-catalog.js";
import { SCHEMA_BOUNDS, ValidatorCache } from "../../src/catalog/validator.js";
import { ConfigError, parseConfig } from "../../src/config/validate.js";

const ADD = {
  name: "add",
  description: "Adds.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" }, owner: { type: "string" } },
    required: ["a", "b", "owner"],
    additionalProperties: false,
  },
};

describe("overrides", () => {
  const catalog = new ToolCatalog({
    add: {
      name: "plus",
      appendDescription: "Reviewed.",
      pin: { owner: "acme" },
      defaults: { b: 1 },
      schema: { a: { enum: [1, 2, 3] } },
      annotations: { readOnlyHint: true },
    },
    "gh_*": { description: "A GitHub tool." },
  });

  it("shows the listed tool: renamed, described, pinned argument gone, default shown and no longer required", () => {
    const [tool] = catalog.catalogView([ADD]) as Array<Record<string, unknown>>;
    expect(tool).toEqual({
      name: "plus",
      description: "Adds.\n\nReviewed.",
      annotations: { readOnlyHint: true },
      inputSchema: {
        type: "object",
        properties: { a: { type: "number", enum: [1, 2, 3] }, b: { type: "number", default: 1 } },
        required: ["a"],
        additionalProperties: false,
      },
    });
  });

  it("applies a glob key to every tool it matches, an exact key first", () => {
    const tools = catalog.catalogView([{ name: "gh_issue" }, { name: "other" }]) as Array<Record<string, unknown>>;
    expect(tools).toEqual([{ name: "gh_issue", description: "A GitHub tool." }, { name: "other" }]);
  });

  it("maps a call back: upstream name, defaults filled, pinned values merged last", () => {
    expect(catalog.mapCall("plus", { a: 2 })).toMatchObject({
      upstreamName: "add",
      visibleArgs: { a: 2, b: 1 },
      args: { a: 2, b: 1, owner: "acme" },
    });
  });

  it("refuses the upstream's own name of a renamed tool", () => {
    expect(catalog.mapCall("add", { a: 1 })).toEqual({ reason: "unknown_tool", tool: "add" });
  });

  it("refuses a pinned argument under its own name, another case, or a compatibility form", () => {
    for (const key of ["owner", "OWNER", "Ｏwner", "ｏｗｎｅｒ"])
      expect(catalog.mapCall("plus", { a: 1, [key]: "evil" })).toEqual({
        reason: "pinned_argument",
        tool: "plus",
        argument: key,
      });
  });

  it("leaves out an upstream tool whose name another tool was renamed to: that name calls the renamed one", () => {
    const c = new ToolCatalog({ add: { name: "sum" } });
    expect((c.catalogView([{ name: "add" }, { name: "sum" }]) as Array<{ name: string }>).map((t) => t.name)).toEqual([
      "sum",
    ]);
    expect(c.mapCall("sum", {})).toMatchObject({ upstreamName: "add" });
  });

  it("renames prompts and replaces their description", () => {
    const c = new ToolCatalog({}, { greet: { name: "welcome", description: "Welcome someone." } });
    expect(c.promptsView([{ name: "greet", description: "Greets." }])).toEqual([
      { name: "welcome", description: "Welcome someone." },
    ]);
    expect(c.upstreamPrompt("welcome")).toBe("greet");
    expect(c.upstreamPrompt("greet")).toBeUndefined();
  });
});

describe("validation", () => {
  it("checks against the tool as listed after overrides, per caller, with the validator's path and message", () => {
    const route = new RouteCatalog({ add: { pin: { owner: "acme" } } }, undefined, "enforce");
    route.viewToolList("alice", { tools: [ADD] });
    const call = route.mapCall("add", { a: 1, b: "2" });
    if ("reason" in call) throw new Error("mapped");
    expect(route.check("alice", call)).toEqual({
      kind: "invalid",
      errors: [{ path: "/b", message: "must be number" }],
      enforced: true,
    });
    // The listed schema (no owner) is what is checked: additionalProperties: false does not refuse the pin.
    const ok = route.mapCall("add", { a: 1, b: 2 });
    if ("reason" in ok) throw new Error("mapped");
    expect(route.check("alice", ok)).toEqual({ kind: "pass" });
    // Another caller has not listed the tool: nothing known to check against.
    expect(route.check("bob", call)).toEqual({ kind: "pass" });
  });

  it("resolves local $ref and reads a draft-07 declaration as 2020-12", () => {
    const v = new ValidatorCache();
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { n: { $ref: "#/$defs/n" } },
      $defs: { n: { type: "integer", minimum: 0 } },
    };
    expect(v.validate(schema, { n: 1 })).toEqual({ ok: true });
    expect(v.validate(schema, { n: -1 })).toEqual({ ok: false, errors: [{ path: "/n", message: "must be >= 0" }] });
  });

  it("validates recursive data through a $ref to the root", () => {
    const tree = {
      type: "object",
      properties: { kids: { type: "array", items: { $ref: "#" } }, v: { type: "number" } },
    };
    const v = new ValidatorCache();
    expect(v.validate(tree, { kids: [{ v: 1 }, { kids: [{ v: "x" }] }] })).toEqual({
      ok: false,
      errors: [{ path: "/kids/1/kids/0/v", message: "must be number" }],
    });
  });

  it("does not validate with a $ref cycle that never reaches the arguments", () => {
    const v = new ValidatorCache();
    const cyclic = { $ref: "#/$defs/a", $defs: { a: { anyOf: [{ $ref: "#/$defs/a" }, { type: "string" }] } } };
    expect(v.validate(cyclic, {})).toEqual({ ok: "unusable", why: "a $ref cycle that never reaches the arguments" });
  });

  it("does not validate with a composition whose fan-out multiplies past the bound", () => {
    const defs: Record<string, unknown> = { d30: { type: "string" } };
    for (let i = 0; i < 30; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    const verdict = new ValidatorCache().validate({ $ref: "#/$defs/d0", $defs: defs }, {});
    expect(verdict.ok).toBe("unusable");
  });

  it("does not fetch a remote $ref, nor take a schema past its size or depth bounds", () => {
    const v = new ValidatorCache();
    expect(v.validate({ type: "object", properties: { a: { $ref: "http://127.0.0.1:1/x" } } }, {}).ok).toBe("unusable");
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i <= SCHEMA_BOUNDS.maxDepth; i++) deep = { allOf: [deep] };
    expect(v.validate(deep, {}).ok).toBe("unusable");
    const big = { type: "object", description: "x".repeat(SCHEMA_BOUNDS.maxChars) };
    expect(v.validate(big, {}).ok).toBe("unusable");
  });

  it("does not run a pattern that may backtrack catastrophically, and runs an ordinary one", () => {
    const v = new ValidatorCache();
    const evil = { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } };
    expect(v.validate(evil, { s: `${"a".repeat(40)}!` }).ok).toBe("unusable");
    const keyed = { type: "object", patternProperties: { "^(x|y*)*$": { type: "string" } } };
    expect(v.validate(keyed, {}).ok).toBe("unusable");
    const plain = { type: "object", properties: { s: { type: "string", pattern: "^[a-z]+-\\d{3}$" } } };
    expect(v.validate(plain, { s: "abc-123" })).toEqual({ ok: true });
    expect(v.validate(plain, { s: "abc" }).ok).toBe(false);
  });

  it("compiles two tools that share an $id with different schemas apart", () => {
    const v = new ValidatorCache();
    expect(v.validate({ $id: "urn:same", type: "object", required: ["a"] }, {}).ok).toBe(false);
    expect(v.validate({ $id: "urn:same", type: "object", required: ["b"] }, { b: 1 }).ok).toBe(true);
  });

  it("keeps a bounded number of compiled schemas, one per schema digest", () => {
    const v = new ValidatorCache(3);
    for (let i = 0; i < 10; i++) v.validate({ type: "object", maxProperties: i }, {});
    v.validate({ type: "object", maxProperties: 9 }, {});
    expect(v.size).toBe(3);
  });

  it("checks oversized arguments in one pass: a long array is judged, not refused for its size", () => {
    const v = new ValidatorCache();
    const schema = { type: "object", properties: { xs: { type: "array", items: { type: "number" } } } };
    const xs = Array.from({ length: 200_000 }, (_, i) => i);
    expect(v.validate(schema, { xs })).toEqual({ ok: true });
    xs[199_999] = "x" as never;
    expect(v.validate(schema, { xs })).toEqual({
      ok: false,
      errors: [{ path: "/xs/199999", message: "must be number" }],
    });
  });
});

describe("config", () => {
  const base = { upstreams: { gh: { url: "http://127.0.0.1:1/mcp" } } };
  const problems = (tools: unknown): readonly string[] => {
    try {
      parseConfig({ upstreams: { gh: { ...base.upstreams.gh, tools } } });
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };

  it("accepts the contract's fields", () => {
    const config = parseConfig({
      upstreams: {
        gh: {
          ...base.upstreams.gh,
          validateArguments: "warn",
          tools: { create_issue: { name: "new_issue", pin: { owner: "acme" }, defaults: { labels: [] } } },
          prompts: { summarize: { name: "summary" } },
        },
      },
      federated: { all: { upstreams: ["gh"], tools: { "gh__*": { appendDescription: "Via the gateway." } } } },
    });
    expect(config.upstreams.gh?.validateArguments).toBe("warn");
  });

  it("refuses two renames to one name, a rename onto a tool that keeps its name, and a glob that renames", () => {
    expect(problems({ a: { name: "x" }, b: { name: "x" } }).join("\n")).toMatch(/clashes with the rename of a/);
    expect(problems({ a: { name: "b" }, b: { description: "kept" } }).join("\n")).toMatch(/clashes with the tool b/);
    expect(problems({ "gh_*": { name: "x" } }).join("\n")).toMatch(/cannot rename/);
    expect(problems({ a: { name: "has space" } }).join("\n")).toMatch(/MCP's tool name rule/);
  });

  it("accepts two tools swapping names", () => {
    expect(problems({ a: { name: "b" }, b: { name: "a" } })).toEqual([]);
  });
});

describe("--check", () => {
  async function check(yaml: string): Promise<{ code: number | null; err: string }> {
    const dir = await mkdtemp(join(tmpdir(), "catalog-check-"));
    try {
      const file = join(dir, "gateway.yaml");
      await writeFile(file, yaml);
      const err: string[] = [];
      const result = await runCli(["--check", "--config", file], {
        env: {},
        stdout: () => undefined,
        stderr: (t) => err.push(t),
      });
      return { code: result.exitCode, err: err.join("") };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it("refuses a rename clash with the start's words, and passes a clean catalog", async () => {
    const clash = await check(
      "upstreams:\n  gh:\n    url: http://127.0.0.1:1/mcp\n    tools:\n      a: { name: x }\n      b: { name: x }\n",
    );
    expect(clash.code).toBe(EXIT_USAGE);
    expect(clash.err).toContain("upstreams.gh.tools.b.name: clashes with the rename of a: both would be called x");
    const clean = await check(
      "upstreams:\n  gh:\n    url: http://127.0.0.1:1/mcp\n    validateArguments: enforce\n    tools:\n      a: { name: x, pin: { owner: acme } }\n",
    );
    expect(clean).toEqual({ code: EXIT_OK, err: "" });
  });
});

describe("listing on a caller's behalf", () => {
  it("lists once for concurrent calls, and not again for a while after a listing that failed", async () => {
    // Not 0: lru-cache reads a start time of 0 as "no TTL".
    let t = 1_000;
    const route = new RouteCatalog(undefined, undefined, "enforce", () => t);
    let lists = 0;
    let release: (whole: boolean) => void = () => undefined;
    const list = (): Promise<boolean> => {
      lists += 1;
      return new Promise<boolean>((resolve) => (release = resolve));
    };
    expect(route.needsListing("alice", "add")).toBe(true);
    const both = Promise.all([route.listFor("alice", list), route.listFor("alice", list)]);
    release(false);
    await both;
    expect(lists).toBe(1);
    expect(route.needsListing("alice", "add")).toBe(false);
    t += 31_000;
    expect(route.needsListing("alice", "add")).toBe(true);
  });

  it("needs no listing once a complete one did not name the tool, nor for a tool the caller listed", async () => {
    const route = new RouteCatalog(undefined, undefined, "enforce", () => 0);
    route.viewToolList("bob", { tools: [ADD] });
    expect(route.needsListing("bob", "add")).toBe(false);
    expect(route.needsListing("bob", "other")).toBe(true);
    await route.listFor("bob", () => Promise.resolve(true));
    expect(route.needsListing("bob", "other")).toBe(false);
    expect(new RouteCatalog(undefined, undefined, "off").needsListing("bob", "other")).toBe(false);
  });
});
