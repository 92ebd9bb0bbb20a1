// The pure logic of the one bench harness (issue 38): which suite `npm run bench -- …` runs, the generated sections of
// bench/RESULTS.md, the per-round ratios of the in-process priced paths and the pipeline steps' share of a profile.
// No timing is measured here; the figures are made up.
import { describe, expect, it } from "vitest";
import { compare, roundRatios, summarizePass, type Baseline } from "../../bench/lib/check.js";
import {
  gcTotals,
  MIN_SCAVENGES,
  PROMOTED_METRIC,
  promotedPerRequest,
  promotionRatios,
} from "../../bench/lib/gc-promotions.js";
import { mergeResults, mergeSection, TASKS_MARKERS } from "../../bench/lib/markdown.js";
import { microRatios } from "../../bench/lib/micro-paths.js";
import { stepShare } from "../../bench/lib/pipeline-share.js";
import { pickSuite, SUITES } from "../../bench/lib/suites.js";

describe("the suite a command line names", () => {
  it("takes the first argument, or --suite NAME, and passes the rest on", () => {
    expect(pickSuite(["tasks", "--only", "get"])).toEqual({ suite: "tasks", rest: ["--only", "get"], src: false });
    expect(pickSuite(["--full", "--suite", "shared", "--workers", "2"])).toEqual({
      suite: "shared",
      rest: ["--full", "--workers", "2"],
      src: false,
    });
  });

  it("runs the table or the guard without one, and --src anywhere selects src/", () => {
    expect(pickSuite(["--check", "--priced-only"])).toEqual({
      suite: undefined,
      rest: ["--check", "--priced-only"],
      src: false,
    });
    expect(pickSuite(["--src", "stdio-peers", "--rounds", "2"])).toEqual({
      suite: "stdio-peers",
      rest: ["--rounds", "2"],
      src: true,
    });
  });

  it("names a file for every suite the old bench:* scripts ran", () => {
    for (const name of ["tasks", "shared", "redis", "adaptive", "stdio", "stdio-peers", "sessions", "federation"])
      expect(SUITES[name]?.file).toMatch(/\.ts$/);
    for (const name of ["observability", "auth", "startup", "upstreams", "ratelimit", "catalog", "pinning"])
      expect(SUITES[name]?.file).toMatch(/\.ts$/);
    expect(SUITES["credentials"]?.file).toBe("credentials.ts");
  });
});

describe("generated sections of RESULTS.md", () => {
  const section = `${TASKS_MARKERS.start}\n## Tasks (generated)\nnew\n${TASKS_MARKERS.end}`;

  it("replaces the tasks section between its markers, leaving the rest and the table's section alone", () => {
    const before = mergeResults(undefined, "<!-- bench:results:start x -->");
    const file = `# R\n\nnotes\n\n${TASKS_MARKERS.start}\nold\n${TASKS_MARKERS.end}\n\nafter\n`;
    const merged = mergeSection(file, section, TASKS_MARKERS);
    expect(merged).toBe(`# R\n\nnotes\n\n${section}\n\nafter\n`);
    expect(mergeSection(merged, section, TASKS_MARKERS)).toBe(merged);
    expect(before).toContain("bench:results:start");
  });

  it("appends the section when the file has no markers yet", () => {
    expect(mergeSection("# R\n", section, TASKS_MARKERS)).toBe(`# R\n\n${section}\n`);
  });
});

describe("ratios per round", () => {
  it("divides round by round and leaves out a round with a missing, zero or infinite side", () => {
    expect(roundRatios([2, 3, 4, 5], [1, 0, 2])).toEqual([2, 2]);
    expect(roundRatios([0, 6], [1, 3])).toEqual([2]);
  });

  it("gives each in-process path its ratio to its reference, and the pass the median", () => {
    const ratios = microRatios({
      cases: [
        { key: "validator/call", label: "v", aim: 1, subjectNs: [100, 120, 90], referenceNs: [1000, 1000, 1000] },
        { key: "pinning/list", label: "p", aim: 0.25, subjectNs: [50], referenceNs: [200] },
      ],
    });
    expect(ratios).toEqual({ "validator/call": [0.1, 0.12, 0.09], "pinning/list": [0.25] });
    expect(summarizePass(ratios)).toEqual({ "validator/call": 0.1, "pinning/list": 0.25 });
  });
});

describe("the pipeline steps' share of a profile", () => {
  const frame = (functionName: string, url: string): { functionName: string; url: string } => ({ functionName, url });
  const PIPE = "file:///r/src/server/pipeline.ts";

  it("counts what runs under the steps against every other non-idle sample, not the handler's chain", () => {
    const nodes = [
      { id: 1, callFrame: frame("(root)", ""), hitCount: 0, children: [2, 3, 9] },
      { id: 2, callFrame: frame("(idle)", ""), hitCount: 500 },
      { id: 3, callFrame: frame("", PIPE), hitCount: 2, children: [4, 6, 7] },
      // a step (server/steps.ts) and what it calls
      { id: 4, callFrame: frame("", "file:///r/src/server/steps.ts"), hitCount: 5, children: [5] },
      { id: 5, callFrame: frame("readPost", "file:///r/src/server/read-post.ts"), hitCount: 3 },
      // a step defined in an endpoint's file is a step
      { id: 6, callFrame: frame("", "file:///r/src/endpoints/named-route.ts"), hitCount: 1 },
      // the handler: bindingIssued's closure, then the route's code
      { id: 7, callFrame: frame("", "file:///r/src/replicas/session-steps.ts"), hitCount: 4, children: [8] },
      { id: 8, callFrame: frame("", "file:///r/src/endpoints/named-route.ts"), hitCount: 40 },
      // everything else the process does for the request
      { id: 9, callFrame: frame("parserOnHeadersComplete", "node:_http_common"), hitCount: 45 },
    ];
    expect(stepShare(nodes)).toEqual({ steps: 2 + 5 + 3 + 1, rest: 4 + 40 + 45 });
  });

  it("knows the handler by the name dist/ keeps", () => {
    const nodes = [
      { id: 1, callFrame: frame("from", "file:///r/dist/server/pipeline.js"), hitCount: 0, children: [2, 3] },
      { id: 2, callFrame: frame("run", "file:///r/dist/server/steps.js"), hitCount: 10 },
      { id: 3, callFrame: frame("", "file:///r/dist/replicas/session-steps.js"), hitCount: 0, children: [4] },
      { id: 4, callFrame: frame("handle", "file:///r/dist/endpoints/named-route.js"), hitCount: 90 },
    ];
    expect(stepShare(nodes)).toEqual({ steps: 10, rest: 90 });
  });
});

const baselineOf = (metrics: Baseline["metrics"]): Baseline => ({
  version: 1,
  about: "",
  updated: { date: "d", command: "c", machine: "m" },
  calibration: null,
  metrics,
});

describe("bytes promoted per request, from --trace-gc-nvp", () => {
  const scavenge = (promoted: number, ms = 100): string =>
    `[123:0x5d1f2a0]     ${ms} ms: pause=0.5 mutator=3.1 gc=s reduce_memory=0 scavenge=0.40 total_size_before=9000 promoted=${promoted} semi_space_copied=2048 nodes_promoted=7 promotion_ratio=1%`;
  const markCompact = "[123:0x5d1f2a0]     900 ms: pause=4.0 mutator=50.0 gc=mc reduce_memory=0 promoted=0";

  it("sums the scavenges' promoted= bytes and counts scavenges and mark-compacts, skipping other lines", () => {
    const lines = [
      "mcp-task-gateway listening on http://127.0.0.1:4000/mcp → upstream http://127.0.0.1:4001/mcp",
      scavenge(4096),
      scavenge(1000, 120),
      markCompact,
      '{"port":4002}',
    ];
    expect(gcTotals(lines)).toEqual({ scavenges: 2, promotedBytes: 5096, markCompacts: 1 });
    // The window is the lines given: a stretch of them counts only its own.
    expect(gcTotals(lines.slice(2))).toEqual({ scavenges: 1, promotedBytes: 1000, markCompacts: 1 });
    expect(gcTotals([])).toEqual({ scavenges: 0, promotedBytes: 0, markCompacts: 0 });
  });

  it("divides by the requests, and says nothing for a point with too few scavenges", () => {
    expect(
      promotedPerRequest({ requests: 1000, scavenges: MIN_SCAVENGES, promotedBytes: 100_000, markCompacts: 0 }),
    ).toBe(100);
    expect(
      promotedPerRequest({ requests: 1000, scavenges: MIN_SCAVENGES - 1, promotedBytes: 1, markCompacts: 0 }),
    ).toBe(null);
    expect(promotedPerRequest({ requests: 0, scavenges: 9, promotedBytes: 1, markCompacts: 0 })).toBe(null);
  });

  it("pairs gateway and floor per round, leaving out a round either could not measure", () => {
    const p = (requests: number, promotedBytes: number, scavenges = 10) => ({
      requests,
      scavenges,
      promotedBytes,
      markCompacts: 0,
    });
    const ratios = promotionRatios({
      gateway: [p(10_000, 1_000_000), p(10_000, 45_000_000), p(10_000, 1_000_000)],
      floor: [p(20_000, 2_000_000), p(10_000, 1_000_000), p(10_000, 1_000_000, 1)],
    });
    expect(ratios).toEqual([1, 45]);
    // 45× is far beyond the fixed bound the guard holds it to; ≈ 1× within it.
    expect(PROMOTED_METRIC.bound).toBe(3);
    expect(compare(baselineOf({}), { [PROMOTED_METRIC.key]: 45 }, [PROMOTED_METRIC])[0]?.verdict).toBe("worse");
    expect(compare(baselineOf({}), { [PROMOTED_METRIC.key]: 1.1 }, [PROMOTED_METRIC])[0]?.verdict).toBe("ok");
  });
});
