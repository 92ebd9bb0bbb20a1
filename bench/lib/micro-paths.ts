// What the in-process paths of issues 34–36 add, priced by the regression guard (`npm run bench -- --check`, issue 38
// item 6). Each figure is the CPU of the added work divided by the CPU of a reference operation measured in the same
// process in the same round (the two alternate, the order swapped every round), so that a slower or busier machine
// moves both sides. The reference is what the request pays anyway: reading and writing its JSON once
// (JSON.parse + JSON.stringify of the same message, or of the same tools/list page).
//
// The aims, set before the first measurement (issue 38: "with an aim stated before measuring"):
//
//   metric (baseline key)      added work                                        reference                  aim
//   validator/call             RouteCatalog.check of a mapped call, validateArg-  parse+stringify of the     ≤ 1.0×
//                              uments: enforce, compiled schema cached             tools/call message
//   catalog/call               mapCall (rename, pin, default) and the rewritten   parse+stringify of the     ≤ 1.5×
//                              request re-encoded (what a call with overrides      tools/call message
//                              pays beyond the validation)
//   catalog/list               viewToolList with an override on every tool of a   parse+stringify of the     ≤ 0.5×
//                              50-tool page (validateArguments off)                page
//   pinning/list               PinRegistry.checkList of the same page, every      parse+stringify of the     ≤ 0.25×
//                              tool approved (memory store, the steady state)      page
//   credentials/hit            TokenCache.get of a held token (every request to   parse+stringify of the     ≤ 0.5×
//                              an upstream with oauth)                             tools/call message
//
// The token exchange (a miss, once per caller and presented token per token lifetime) is guarded as a ratio of wall
// time (lib/credential-exchange.ts). The request pipeline's steps are priced apart (lib/pipeline-share.ts).
import { TokenCache } from "../../src/credentials/token-cache.js";
import { PinRegistry } from "../../src/catalog/pin-registry.js";
import { RouteCatalog } from "../../src/catalog/route-catalog.js";
import { MemoryPinStore } from "../../src/store/pins.js";
import type { CheckMetric, PassRatios } from "./check.js";
import { median, roundRatios } from "./check.js";
import { renderTextTable } from "./table.js";

/** A GitHub-like tool: a handful of typed arguments, one enum, one nested object, a $ref. */
export function githubTool(i: number): Record<string, unknown> {
  return {
    name: `tool_${i}`,
    description: `Tool number ${i}, which does something useful with a repository.`,
    inputSchema: {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        owner: { type: "string", description: "Repository owner" },
        repo: { type: "string", description: "Repository name" },
        title: { type: "string", maxLength: 256 },
        state: { type: "string", enum: ["open", "closed"] },
        labels: { type: "array", items: { type: "string" } },
        page: { $ref: "#/$defs/page" },
      },
      required: ["owner", "repo", "title"],
      additionalProperties: false,
      $defs: { page: { type: "object", properties: { n: { type: "integer", minimum: 1 } } } },
    },
    annotations: { readOnlyHint: false },
  };
}

/** Overrides on every tool of the page: a rename, an appended description, a pinned and a defaulted argument. */
export function overridesFor(tools: number): ConstructorParameters<typeof RouteCatalog>[0] & object {
  return Object.fromEntries(
    Array.from({ length: tools }, (_, i) => [
      `tool_${i}`,
      { name: `renamed_${i}`, appendDescription: "Reviewed.", pin: { owner: "acme" }, defaults: { state: "open" } },
    ]),
  );
}

interface MicroCase {
  key: string;
  label: string;
  aim: number;
  /** Operations per round (the subject and its reference each). */
  ops: number;
  reference: "call" | "page";
  subject: () => unknown;
}

export const MICRO_METRICS: readonly CheckMetric[] = [
  { key: "validator/call", label: "argument validation ÷ call JSON", better: "lower" },
  { key: "catalog/call", label: "catalog override on a call ÷ call JSON", better: "lower" },
  { key: "catalog/list", label: "catalog overrides on tools/list ÷ page JSON", better: "lower" },
  { key: "pinning/list", label: "pinning check on tools/list ÷ page JSON", better: "lower" },
  { key: "credentials/hit", label: "token-cache hit ÷ call JSON", better: "lower" },
];

/** Per case: per round, the subject's and the reference's CPU ns per operation. */
export interface MicroPaths {
  cases: Array<{ key: string; label: string; aim: number; subjectNs: number[]; referenceNs: number[] }>;
}

const TOOLS = 50;

async function cases(): Promise<MicroCase[]> {
  const page = { tools: Array.from({ length: TOOLS }, (_, i) => githubTool(i)) };
  const overrides = overridesFor(TOOLS);
  const enforce = new RouteCatalog(overrides, undefined, "enforce");
  const off = new RouteCatalog(overrides, undefined, "off");
  enforce.viewToolList("caller", page);
  const args = { repo: "gateway", title: "A bug", labels: ["bug"], page: { n: 2 } };
  const message = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "renamed_3", arguments: args } };
  const mapped = enforce.mapCall("renamed_3", args);
  if ("reason" in mapped) throw new Error(`the bench's call was refused: ${mapped.reason}`);
  const pins = new PinRegistry(
    new MemoryPinStore(),
    () => ({ policy: "hide", pins: {}, listMaxAgeMs: 0 }),
    { changed: () => {}, approved: () => {}, overflow: () => {}, failed: () => {} },
    Date.now,
  );
  await pins.refresh("u");
  await pins.seed("u", page.tools);
  const tokens = new TokenCache({ maxEntries: 10_000, skewMs: 30_000, defaultTtlMs: 300_000, now: Date.now });
  await tokens.get("k", () => Promise.resolve({ accessToken: "t", expiresAt: Date.now() + 3_600_000 }));
  const miss = (): Promise<never> => Promise.reject(new Error("a miss in the hit's measurement"));
  return [
    {
      key: "validator/call",
      label: "argument validation (enforce, cached)",
      aim: 1.0,
      ops: 100_000,
      reference: "call",
      subject: () => enforce.check("caller", mapped),
    },
    {
      key: "catalog/call",
      label: "catalog override on a call (map + re-encode)",
      aim: 1.5,
      ops: 100_000,
      reference: "call",
      subject: () => {
        const m = off.mapCall("renamed_3", args);
        return "reason" in m
          ? m
          : Buffer.from(JSON.stringify({ ...message, params: { name: m.upstreamName, arguments: m.args } }));
      },
    },
    {
      key: "catalog/list",
      label: `catalog overrides on tools/list (${TOOLS} tools)`,
      aim: 0.5,
      ops: 1_000,
      reference: "page",
      subject: () => off.viewToolList("caller", page),
    },
    {
      key: "pinning/list",
      label: `pinning check on tools/list (${TOOLS} tools)`,
      aim: 0.25,
      ops: 1_000,
      reference: "page",
      subject: () => pins.checkList("u", page.tools),
    },
    {
      key: "credentials/hit",
      label: "token-cache hit",
      aim: 0.5,
      ops: 100_000,
      reference: "call",
      // The cache answers a hit with a settled promise; what a request pays is the call and the await.
      subject: () => tokens.get("k", miss),
    },
  ];
}

/** CPU ns per operation of `body` over `ops` operations (awaited when it answers a promise). */
async function cpuNs(ops: number, body: () => unknown): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < ops; i++) {
    const r = body();
    if (r instanceof Promise) await r;
  }
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / ops;
}

/** Every case, `rounds` times, subject and reference alternating (the order swapped every round), after a warm-up. */
export async function measureMicroPaths(rounds: number, log: (line: string) => void): Promise<MicroPaths> {
  const list = await cases();
  const callText = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "renamed_3", arguments: { repo: "gateway", title: "A bug", labels: ["bug"], page: { n: 2 } } },
  });
  const pageText = JSON.stringify({ tools: Array.from({ length: TOOLS }, (_, i) => githubTool(i)) });
  const references = {
    call: () => JSON.stringify(JSON.parse(callText)),
    page: () => JSON.stringify(JSON.parse(pageText)),
  };
  const out: MicroPaths = { cases: [] };
  for (const c of list) {
    const reference = references[c.reference];
    // Warm-up: enough calls for the JIT to settle (a first round of the 1,000-page cases ran 1.8× slow without it).
    await cpuNs(Math.max(Math.ceil(c.ops / 5), 3_000), c.subject);
    await cpuNs(Math.max(Math.ceil(c.ops / 5), 3_000), reference);
    const entry = { key: c.key, label: c.label, aim: c.aim, subjectNs: [] as number[], referenceNs: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        entry.subjectNs.push(await cpuNs(c.ops, c.subject));
        entry.referenceNs.push(await cpuNs(c.ops, reference));
      } else {
        entry.referenceNs.push(await cpuNs(c.ops, reference));
        entry.subjectNs.push(await cpuNs(c.ops, c.subject));
      }
      log(
        `${c.key.padEnd(16)} round ${r}  ${(entry.subjectNs[r] ?? 0).toFixed(0)} ns ÷ ${(entry.referenceNs[r] ?? 0).toFixed(0)} ns (${c.reference} JSON)`,
      );
    }
    out.cases.push(entry);
  }
  return out;
}

/** Per metric, its ratio in each round. */
export function microRatios(m: MicroPaths): PassRatios {
  return Object.fromEntries(m.cases.map((c) => [c.key, roundRatios(c.subjectNs, c.referenceNs)]));
}

/** The aims: each case's median ratio and added ns against its bound. */
export function renderMicroAims(m: MicroPaths): string {
  const ratios = microRatios(m);
  return renderTextTable(
    ["in-process path", "added, ns CPU", "reference, ns", "ratio", "aim", "met"],
    m.cases.map((c) => {
      const ratio = median(ratios[c.key] ?? []);
      return [
        c.label,
        (median(c.subjectNs) ?? 0).toFixed(0),
        (median(c.referenceNs) ?? 0).toFixed(0),
        ratio === null ? "—" : ratio.toFixed(3),
        `≤ ${c.aim}×`,
        ratio === null ? "—" : ratio <= c.aim ? "met" : "NOT met",
      ];
    }),
  );
}
