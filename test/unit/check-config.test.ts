// --check compiles every rule as a start would and names the one it cannot compile: the global rules and each named
// upstream's own. The glob dialect accepts every string today, so a dialect that refuses "[" stands in for a future one.
import { describe, expect, it, vi } from "vitest";
import { checkConfig } from "../../src/check-config.js";
import { parseConfig } from "../../src/config/validate.js";

vi.mock("../../src/config/glob.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/config/glob.js")>();
  return {
    ...actual,
    globToRegExp: (glob: string) => {
      if (glob.includes("[")) throw new Error("[ is not part of the glob dialect");
      return actual.globToRegExp(glob);
    },
  };
});

describe("checkConfig: rules it cannot compile", () => {
  it("names each one by its field, per upstream too, and finds nothing in rules that compile", async () => {
    const config = parseConfig({
      upstream: { url: "http://127.0.0.1:1/mcp" },
      upstreams: {
        github: {
          url: "https://api.example.com/mcp",
          tasks: {
            thresholdMs: 100,
            rules: [
              { tool: "create_*", mode: "always" },
              { tool: "bad[", mode: "never" },
            ],
          },
          access: { rules: [{ tools: ["get_*", "list["], effect: "allow" }] },
        },
        files: {
          command: [process.execPath, "server.js"],
          access: { default: "deny", rules: [{ tools: "read_*", match: { scope: "files[" }, effect: "allow" }] },
        },
        docs: { url: "https://docs.example.com/mcp", tasks: { rules: [{ tool: "search", mode: "auto" }] } },
      },
      tasks: { rules: [{ tool: "x[", mode: "always", upstream: "git*" }] },
      access: { rules: [{ tools: "*", effect: "allow" }] },
    });
    expect(await checkConfig(config, { PATH: "" })).toEqual([
      "tasks.rules.0: [ is not part of the glob dialect",
      "upstreams.github.tasks.rules.1: [ is not part of the glob dialect",
      "upstreams.github.access.rules.0: [ is not part of the glob dialect",
      "upstreams.files.access.rules.0: [ is not part of the glob dialect",
    ]);
  });
});
