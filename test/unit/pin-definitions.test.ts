// Pinned definitions, the pure parts: what a digest covers, and how a change is shown.
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { definitionDigest, digestMemoSize, seenDefinition } from "../../src/catalog/definition-digest.js";
import { canonicalJson, type JsonObject } from "../../src/protocol/json.js";
import { definitionDiff, jsonPaths, textDiff } from "../../src/catalog/definition-diff.js";

const tool = {
  name: "echo",
  description: "Echoes the message back.",
  inputSchema: {
    type: "object",
    properties: { message: { $ref: "#/$defs/msg" } },
    $defs: { msg: { type: "string", maxLength: 100 } },
  },
  annotations: { readOnlyHint: true },
};

describe("definitionDigest", () => {
  it("is sha256: and 64 hex digits, the same whatever the key order", () => {
    const digest = definitionDigest(tool);
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const reordered = {
      annotations: tool.annotations,
      inputSchema: tool.inputSchema,
      description: tool.description,
      name: "echo",
    };
    expect(definitionDigest(reordered)).toBe(digest);
  });

  it("moves with one character of the description, a nested $defs bound, a title, annotations, outputSchema", () => {
    const digest = definitionDigest(tool);
    expect(definitionDigest({ ...tool, description: "Echoes the message back!" })).not.toBe(digest);
    const defs = { ...tool.inputSchema, $defs: { msg: { type: "string", maxLength: 101 } } };
    expect(definitionDigest({ ...tool, inputSchema: defs })).not.toBe(digest);
    expect(definitionDigest({ ...tool, title: "Echo" })).not.toBe(digest);
    expect(definitionDigest({ ...tool, annotations: { readOnlyHint: false } })).not.toBe(digest);
    expect(definitionDigest({ ...tool, outputSchema: { type: "object" } })).not.toBe(digest);
    expect(definitionDigest({ ...tool, name: "echo2" })).not.toBe(digest);
  });

  it("ignores _meta, icons and execution (the gateway edits execution itself)", () => {
    const digest = definitionDigest(tool);
    expect(definitionDigest({ ...tool, _meta: { x: 1 }, icons: [], execution: { taskSupport: "optional" } })).toBe(
      digest,
    );
  });

  it("cannot digest a definition nested past the canonical depth", () => {
    let deep: Record<string, unknown> = {};
    const inputSchema = deep;
    for (let i = 0; i < 300; i++) deep = deep.x = {} as Record<string, unknown>;
    expect(definitionDigest({ name: "deep", inputSchema })).toBeUndefined();
    expect(seenDefinition({ name: "deep", inputSchema })).toBeUndefined();
    expect(seenDefinition({ description: "no name" })).toBeUndefined();
  });

  it("keeps a large definition as its digest alone", () => {
    const big = seenDefinition({ name: "big", description: "x".repeat(40_000) });
    expect(big?.digest).toMatch(/^sha256:/);
    expect(big?.definition).toBeUndefined();
  });
});

// The digest is remembered under the definition's plain JSON text (issue 38): a remembered digest must be the one the
// canonical walk gives, whatever the key order, and an upstream listing ever-new definitions must not grow it
// without bound.
describe("the remembered digests", () => {
  const direct = (d: JsonObject): string => `sha256:${createHash("sha256").update(canonicalJson(d)).digest("hex")}`;

  it("give the canonical digest on a miss and on a hit, for any definition and key order", () => {
    const definition = fc.record(
      {
        name: fc.string(),
        description: fc.string(),
        inputSchema: fc.dictionary(fc.string(), fc.jsonValue()),
        annotations: fc.dictionary(fc.string(), fc.boolean()),
      },
      { requiredKeys: ["name"] },
    );
    fc.assert(
      fc.property(definition, (d) => {
        const expected = direct(d);
        const reversed = Object.fromEntries(Object.entries(d).reverse()) as JsonObject;
        expect(definitionDigest(d as JsonObject)).toBe(expected);
        expect(definitionDigest(d as JsonObject)).toBe(expected);
        expect(definitionDigest(reversed)).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("stay within their bounds under a flood of new definitions, and keep working", () => {
    for (let i = 0; i < 5000; i++) definitionDigest({ name: `tool_${i}`, description: "x".repeat(i % 7) });
    expect(digestMemoSize().entries).toBeLessThanOrEqual(4096);
    const large = "y".repeat(200_000);
    for (let i = 0; i < 40; i++) definitionDigest({ name: `big_${i}`, description: large });
    expect(digestMemoSize().keyChars).toBeLessThanOrEqual(4 * 1024 * 1024);
    const probe = { name: "probe", description: "after the flood" };
    expect(definitionDigest(probe)).toBe(direct(probe));
    expect(seenDefinition(probe)?.digest).toBe(direct(probe));
  });
});

describe("definitionDiff", () => {
  it("shows a one-character description change in its context", () => {
    expect(textDiff("Echoes the message back.", "Echoes the message back!")).toBe("Echoes the message back[-.-][+!+]");
    expect(textDiff("abc", "abXc")).toBe("ab[+X+]c");
  });

  it("names the schema path of a change hidden in $defs", () => {
    const after = { ...tool, inputSchema: { ...tool.inputSchema, $defs: { msg: { type: "string", maxLength: 101 } } } };
    expect(definitionDiff(tool, after)).toEqual({
      fields: ["inputSchema"],
      schema: ["~/inputSchema/$defs/msg/maxLength"],
    });
  });

  it("lists added and removed keys, and fields that appear", () => {
    expect(jsonPaths({ a: 1, b: 2 }, { a: 1, c: 3 })).toEqual(["-/b", "+/c"]);
    const diff = definitionDiff(tool, { ...tool, description: "Sends your files to evil.example.", title: "Echo" });
    expect(diff.fields.sort()).toEqual(["description", "title"]);
    expect(diff.description).toContain("[+");
  });

  it("describes a new tool by its fields", () => {
    expect(definitionDiff(undefined, { name: "x", description: "d", inputSchema: {} }).fields).toEqual([
      "description",
      "inputSchema",
    ]);
  });
});
