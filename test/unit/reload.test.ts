// What a reload applies and what needs a restart (src/reload.ts).
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/validate.js";
import { changedSettings, planReload, reloadedConfig } from "../../src/reload.js";

const base = parseConfig({ upstream: { url: "http://127.0.0.1:9/mcp" } });

describe("planReload", () => {
  it("nothing changed, nothing to do", () => {
    expect(planReload(base, parseConfig({ upstream: { url: "http://127.0.0.1:9/mcp" } }))).toEqual({
      live: [],
      restart: [],
    });
  });

  it("policy settings apply; ports, upstream and store are named for a restart", () => {
    const next = parseConfig({
      upstream: { url: "http://127.0.0.1:10/mcp" },
      server: { port: 9000 },
      tasks: {
        thresholdMs: 100,
        rules: [{ tool: "x", mode: "always" }],
        maxTasksPerCaller: 3,
        store: "redis://127.0.0.1:6379",
      },
      access: { default: "deny" },
    });
    const plan = planReload(base, next);
    expect(plan.live.sort()).toEqual(["access", "tasks.maxTasksPerCaller", "tasks.rules", "tasks.thresholdMs"]);
    expect(plan.restart.sort()).toEqual(["server.port", "tasks.store", "upstream.url"]);
  });

  it("the reloaded config takes the live settings and keeps the rest as they were", () => {
    const next = parseConfig({
      upstream: { url: "http://127.0.0.1:10/mcp" },
      server: { port: 9000 },
      tasks: { thresholdMs: 100 },
    });
    const out = reloadedConfig(base, next, planReload(base, next));
    expect(out.tasks.thresholdMs).toBe(100);
    expect(out.server.port).toBe(base.server.port);
    expect(out.upstream?.url).toBe(base.upstream?.url);
    // The old config is not changed in place.
    expect(base.tasks.thresholdMs).toBe(5_000);
  });

  it("a setting removed from the file goes back to its default, or away", () => {
    const withHeader = parseConfig({
      upstream: { url: "http://127.0.0.1:9/mcp" },
      tasks: { identityHeader: "x-user" },
    });
    expect(changedSettings(withHeader, base)).toEqual(["tasks.identityHeader"]);
    expect(reloadedConfig(withHeader, base, planReload(withHeader, base)).tasks.identityHeader).toBeUndefined();
  });
});
