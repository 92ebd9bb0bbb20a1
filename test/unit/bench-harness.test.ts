// The pure logic of the one bench harness (issue 38): which suite `npm run bench -- …` runs, the generated sections of
// bench/RESULTS.md, the per-round ratios of the in-process priced paths and the pipeline steps' share of a profile.
// No timing is measured here; the figures are made up.
import { describe, expect, it } from "vitest";
import { roundRatios, summarizePass } from "../../bench/lib/check.js";
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
