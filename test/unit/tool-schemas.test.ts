// What the bridge knows of a legacy upstream's tools for Mcp-Param-* checks
// (bridge-to-legacy/tool-schemas.ts): a complete listing answers for tools it
// does not name ("unlisted": no second tools/list per call), a partial one does not.
import { describe, expect, it } from "vitest";
import { ToolSchemas } from "../../src/bridge-to-legacy/tool-schemas.js";

const REGION = {
  name: "deploy",
  inputSchema: { type: "object", properties: { region: { type: "string", "x-mcp-header": "Region" } } },
};
const PLAIN = { name: "echo", inputSchema: { type: "object", properties: { message: { type: "string" } } } };

function schemas(now = () => 0): ToolSchemas {
  return new ToolSchemas({ ttlMs: 60_000, maxBytes: 64 * 1024 }, now);
}

describe("ToolSchemas", () => {
  it("a listing read to its last page answers for every tool: annotated, plain or not listed", () => {
    const s = schemas();
    s.record("view", { tools: [REGION, PLAIN] }, true);
    const deploy = s.lookup("view", "deploy");
    expect(Array.isArray(deploy) && deploy.map((h) => h.name.toLowerCase())).toEqual(["region"]);
    expect(s.lookup("view", "echo")).toEqual([]);
    expect(s.lookup("view", "missing")).toBe("unlisted");
    expect(s.lookup("other-view", "echo")).toBe("unknown");
  });

  it("a relayed listing of several pages is never complete: a client may skip pages, so unnamed tools stay unknown", () => {
    const s = schemas();
    s.record("view", { tools: [PLAIN], nextCursor: "2" }, true);
    expect(s.lookup("view", "deploy")).toBe("unknown");
    // The last page (or one the client jumped to): what it names is learnt, the rest is still unknown.
    s.record("view", { tools: [REGION] }, false);
    expect(s.lookup("view", "deploy")).not.toBe("unknown");
    expect(s.lookup("view", "missing")).toBe("unknown");
  });

  it("a later page alone, with nothing before it, proves nothing of the other tools", () => {
    const s = schemas();
    s.record("view", { tools: [PLAIN] }, false);
    expect(s.lookup("view", "missing")).toBe("unknown");
  });

  it("the gateway's own reading: complete unless it stopped with a cursor left (page cap)", () => {
    const s = schemas();
    expect(s.lookup(s.replace("a", [{ tools: [PLAIN], nextCursor: "2" }, { tools: [REGION] }]), "missing")).toBe(
      "unlisted",
    );
    expect(s.lookup(s.replace("b", [{ tools: [PLAIN], nextCursor: "2" }]), "missing")).toBe("unknown");
    expect(s.lookup("a", "missing")).toBe("unlisted");
  });

  it("forgets a listing after its TTL, so a tool added upstream is learnt again", () => {
    let t = 1_000; // lru-cache counts a start time of 0 as "no start"
    const s = schemas(() => t);
    s.record("view", { tools: [PLAIN] }, true);
    expect(s.lookup("view", "deploy")).toBe("unlisted");
    t += 60_001;
    expect(s.lookup("view", "deploy")).toBe("unknown");
  });
});
