// What the gateway knows of a legacy upstream's tools for Mcp-Param-* validation
// (SEP-2243): per upstream view (the pooled session's key: credentials,
// declared capabilities, partition), each tool's name and its `x-mcp-header`
// annotations. Learnt from the tools/list answers the bridge relays (a client
// lists tools before it calls them, and re-lists after a -32020), and asked
// for (every page, bounded) when a call names a tool not seen yet.
//
// Bounded: an LRU over byte size (names and annotated paths only, never the
// schemas) with a TTL, so a tool whose schema changed upstream is re-learnt.
//
// A listing read to its last page is complete: a tool it does not name is
// "unlisted" (nothing to check; the upstream answers the call) until the TTL
// ends, not "unknown". Without that, every call of a tool the upstream does not
// list asked for tools/list again: a second upstream round trip per call, seen in
// the era bridge's CPU profile (bench/RESULTS.md, "Era bridge: profile").
import { LRUCache } from "lru-cache";
import { isRecord } from "../protocol/json.js";
import { paramHeadersOf, type ParamHeader } from "../protocol/param-headers.js";

export interface ToolSchemaLimits {
  ttlMs: number;
  /** 0: nothing is kept and nothing is validated. */
  maxBytes: number;
}

/** A tool's annotations, `invalid` when the tool's annotations break the spec (clients exclude it). */
type Tools = Map<string, readonly ParamHeader[] | "invalid">;

/** What one view knows: its tools, and whether the listing they came from was read to its last page. */
interface Entry {
  tools: Tools;
  complete: boolean;
}

/** What `lookup` knows of a tool: its annotations, not named by a complete listing, or not known (ask). */
export type ToolLookup = readonly ParamHeader[] | "unlisted" | "unknown";

/** Most pages the gateway reads when it asks for tools/list itself. */
export const MAX_TOOL_PAGES = 20;

function sizeOf(entry: Entry): number {
  let bytes = 64;
  for (const [name, headers] of entry.tools) {
    bytes += 32 + name.length * 2;
    if (headers !== "invalid")
      for (const h of headers) bytes += 32 + h.name.length * 2 + h.path.reduce((n, p) => n + 16 + p.length * 2, 0);
  }
  return bytes;
}

export class ToolSchemas {
  private readonly cache: LRUCache<string, Entry> | undefined;

  constructor(limits: ToolSchemaLimits, now: () => number) {
    this.cache =
      limits.maxBytes > 0 && limits.ttlMs > 0
        ? new LRUCache<string, Entry>({
            maxSize: limits.maxBytes,
            sizeCalculation: (entry) => Math.max(1, sizeOf(entry)),
            ttl: limits.ttlMs,
            ttlResolution: 0,
            perf: { now },
          })
        : undefined;
    this.enabled = limits.maxBytes > 0;
  }

  /** False when validation is turned off (toolSchemaCacheBytes: 0). */
  readonly enabled: boolean;

  /**
   * Records one tools/list page for `view`. The first page (no cursor) starts
   * afresh, so tools removed upstream are forgotten; later pages add to it.
   */
  record(view: string, result: unknown, firstPage: boolean): void {
    if (!this.cache) return;
    const tools = learn(firstPage ? new Map() : new Map(this.cache.get(view)?.tools ?? []), result);
    // set() again so the size is counted anew; an entry over the whole budget is simply not kept.
    // Complete only for a listing of one page: relayed later pages prove nothing of the pages between
    // (a client may skip to any cursor), so a paged listing is complete only when the gateway read it itself.
    this.cache.set(view, { tools, complete: firstPage && !hasNextCursor(result) });
  }

  /** Replaces what `view` knows with every page the gateway read itself; returns it (kept or not). */
  replace(view: string, pages: readonly unknown[]): Entry {
    const tools: Tools = new Map();
    for (const page of pages) learn(tools, page);
    const entry: Entry = { tools, complete: !hasNextCursor(pages.at(-1)) };
    this.cache?.set(view, entry);
    return entry;
  }

  /** The tool's annotations in `view`, or in `entry`; "unlisted" when a complete listing does not name it. */
  lookup(view: string | Entry, tool: string): ToolLookup {
    const entry = typeof view === "string" ? this.cache?.get(view) : view;
    const headers = entry?.tools.get(tool);
    if (headers === undefined) return entry?.complete ? "unlisted" : "unknown";
    return headers === "invalid" ? [] : headers;
  }
}

function learn(tools: Tools, result: unknown): Tools {
  if (!isRecord(result) || !Array.isArray(result.tools)) return tools;
  for (const tool of result.tools) {
    if (!isRecord(tool) || typeof tool.name !== "string") continue;
    tools.set(tool.name, paramHeadersOf(tool.inputSchema) ?? "invalid");
  }
  return tools;
}

/** Whether a tools/list result says more pages follow (a page that is not a result at all ends nothing). */
function hasNextCursor(result: unknown): boolean {
  return !isRecord(result) || typeof result.nextCursor === "string";
}
