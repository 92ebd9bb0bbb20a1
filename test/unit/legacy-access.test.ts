// Access rules on the legacy pass-through (src/policy/legacy-access.ts).
import { describe, expect, it } from "vitest";
import { legacyAccess } from "../../src/policy/legacy-access.js";
import { AccessPolicy } from "../../src/policy/access.js";
import { parseJsonRpcBody } from "../../src/protocol/jsonrpc.js";

const access = new AccessPolicy({ default: "allow", rules: [{ tools: "secret_*", effect: "deny" }] });
const parsed = (message: unknown) => {
  const p = parseJsonRpcBody(Buffer.from(JSON.stringify(message)));
  if (!p.ok) throw new Error("bad test body");
  return p;
};

describe("legacyAccess", () => {
  it("refuses a call to a denied tool with -32602 and says why", () => {
    const verdict = legacyAccess(
      parsed({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "secret_dump" } }),
      access,
      undefined,
    );
    expect(verdict).toMatchObject({
      kind: "deny",
      tool: "secret_dump",
      fault: { status: 200, error: { code: -32602, data: { reason: "access_denied" } } },
    });
  });

  it("lets an allowed call and other methods through untouched", () => {
    expect(
      legacyAccess(
        parsed({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo" } }),
        access,
        undefined,
      ),
    ).toEqual({ kind: "pass" });
    expect(legacyAccess(parsed({ jsonrpc: "2.0", id: 1, method: "resources/list" }), access, undefined)).toEqual({
      kind: "pass",
    });
  });

  it("filters tools/list", () => {
    const verdict = legacyAccess(parsed({ jsonrpc: "2.0", id: 2, method: "tools/list" }), access, undefined);
    expect(verdict.kind).toBe("filter");
    if (verdict.kind === "filter")
      expect(verdict.edit({ tools: [{ name: "echo" }, { name: "secret_dump" }] })).toEqual({
        tools: [{ name: "echo" }],
      });
  });

  it("refuses a batch that holds a guarded method, and passes one that does not", () => {
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo" } },
      { jsonrpc: "2.0", id: 2, method: "ping" },
    ];
    expect(legacyAccess(parsed(batch), access, undefined)).toMatchObject({ kind: "deny", fault: { status: 400 } });
    expect(legacyAccess(parsed([{ jsonrpc: "2.0", id: 2, method: "ping" }]), access, undefined)).toEqual({
      kind: "pass",
    });
  });
});
