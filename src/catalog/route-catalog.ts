// One upstream's catalog under the policy in force (built with its PolicySet, swapped whole on reload): its
// overrides, its validation mode, and the tool definitions its callers were shown.
//
// Where validation learns a tool's schema: from the tools/list answers that pass through the upstream's route (a
// client lists tools before it calls them, and again after list_changed), kept per caller, since an upstream may
// show different callers different tools. A call to a tool its caller has not listed (since the start, a reload,
// or longer ago than KNOWN_TTL_MS) waits while the gateway lists the tools on the caller's behalf, through the
// route itself (server/catalog-step.ts), once for all of the caller's concurrent calls.
import { LRUCache } from "lru-cache";
import type { PromptOverride, ToolOverride } from "../config/catalog.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { ToolCatalog, viewInputSchema, type CallRefusal, type MappedCall } from "./overrides.js";
import { ValidatorCache, type ArgumentError } from "./validator.js";

export type ValidationMode = "off" | "warn" | "enforce";

/** How long a listed definition is used for validation: a tool changed upstream without list_changed is re-learnt. */
const KNOWN_TTL_MS = 10 * 60_000;
/** How long a caller whose listing failed (the upstream refused it, or was late) is not asked for it again. */
const FAILED_TTL_MS = 30_000;
/** Most (caller, tool) definitions kept per upstream. */
const MAX_KNOWN = 10_000;

/** Every upstream's compiled schemas, one bounded cache per process (the same schema compiles once). */
const VALIDATORS = new ValidatorCache();

/** What validation made of a call. */
export type CallCheck =
  | { kind: "pass" }
  | { kind: "invalid"; errors: ArgumentError[]; enforced: boolean }
  | { kind: "unusable"; why: string };

export class RouteCatalog {
  readonly overrides: ToolCatalog;
  /** (caller, upstream tool) → its inputSchema as the upstream listed it, and as listed after overrides (made once). */
  private readonly known: LRUCache<string, { inputSchema: unknown; listed?: unknown }>;
  /** An override's narrowed arguments as one schema, made once. */
  private readonly partials = new WeakMap<object, object>();

  constructor(
    tools: Readonly<Record<string, ToolOverride>> | undefined,
    prompts: Readonly<Record<string, PromptOverride>> | undefined,
    readonly mode: ValidationMode,
    now?: () => number,
  ) {
    this.overrides = new ToolCatalog(tools, prompts);
    this.known = new LRUCache({ max: MAX_KNOWN, ttl: KNOWN_TTL_MS, ttlResolution: 0, ...(now && { perf: { now } }) });
    this.narrows = Object.values(tools ?? {}).some((o) => o.schema !== undefined);
    this.complete = new LRUCache({
      max: MAX_KNOWN,
      ttl: KNOWN_TTL_MS,
      ttlResolution: 0,
      ...(now && { perf: { now } }),
    });
    this.failed = new LRUCache({ max: MAX_KNOWN, ttl: FAILED_TTL_MS, ttlResolution: 0, ...(now && { perf: { now } }) });
  }

  private readonly narrows: boolean;
  /** Callers whose whole tool list the gateway read itself: a tool it did not name is not the upstream's. */
  private readonly complete: LRUCache<string, true>;
  /** Callers whose listing failed lately: their calls do not each ask again (FAILED_TTL_MS). */
  private readonly failed: LRUCache<string, true>;
  /** One listing at a time per caller: concurrent calls wait for the same one. */
  private readonly listing = new Map<string, Promise<void>>();

  /**
   * Whether a call to `upstreamName` should wait for the gateway to list this caller's tools first: validation is
   * on, the tool's definition is not known for this caller, and no complete listing since said it does not exist.
   */
  needsListing(caller: string, upstreamName: string): boolean {
    return (
      this.mode !== "off" &&
      !this.known.has(`${caller}\n${upstreamName}`) &&
      !this.complete.has(caller) &&
      !this.failed.has(caller)
    );
  }

  /** Runs `list` (which learns through viewToolList; true when it read every page) once for concurrent callers. */
  listFor(caller: string, list: () => Promise<boolean>): Promise<void> {
    let pending = this.listing.get(caller);
    if (!pending) {
      pending = list()
        .then(
          (whole) => {
            if (whole) this.complete.set(caller, true);
            else this.failed.set(caller, true);
          },
          () => {
            this.failed.set(caller, true);
          },
        )
        .finally(() => this.listing.delete(caller));
      this.listing.set(caller, pending);
    }
    return pending;
  }

  /** Nothing to do on this route: no override, no validation. */
  get inert(): boolean {
    return this.overrides.emptyTools && this.overrides.emptyPrompts && this.mode === "off";
  }

  /** Whether tools/list answers must be read (to change them, or to learn their schemas). */
  get editsToolLists(): boolean {
    return !this.overrides.emptyTools || this.mode !== "off";
  }

  /** A tools/list result as the client is shown it; its upstream definitions are learnt for `caller`'s calls. */
  viewToolList(caller: string, result: JsonObject): JsonObject {
    if (!Array.isArray(result.tools)) return result;
    if (this.mode !== "off" || this.narrows)
      for (const t of result.tools)
        if (isRecord(t) && typeof t.name === "string")
          this.known.set(`${caller}\n${t.name}`, { inputSchema: t.inputSchema });
    return this.overrides.emptyTools ? result : { ...result, tools: this.overrides.catalogView(result.tools) };
  }

  viewPromptList(result: JsonObject): JsonObject {
    if (!Array.isArray(result.prompts) || this.overrides.emptyPrompts) return result;
    return { ...result, prompts: this.overrides.promptsView(result.prompts) };
  }

  mapCall(clientName: string, args: JsonObject): MappedCall | CallRefusal {
    return this.overrides.mapCall(clientName, args);
  }

  /**
   * A mapped call's arguments (as the client sent them, defaults filled) against the tool as listed to this
   * caller. An argument narrowed by the override is checked in every mode (enforced: it is the operator's rule);
   * the rest of the schema as `mode` says.
   */
  check(caller: string, call: MappedCall): CallCheck {
    const narrow = call.override?.schema;
    if (narrow) {
      let partial = this.partials.get(narrow);
      if (!partial) this.partials.set(narrow, (partial = { type: "object", properties: narrow }));
      const v = VALIDATORS.validate(partial, call.visibleArgs);
      if (v.ok === false) return { kind: "invalid", errors: v.errors, enforced: true };
    }
    if (this.mode === "off") return { kind: "pass" };
    const def = this.known.get(`${caller}\n${call.upstreamName}`);
    if (!def) return { kind: "pass" };
    const listed = (def.listed ??= call.override ? viewInputSchema(def.inputSchema, call.override) : def.inputSchema);
    const v = VALIDATORS.validate(listed, call.visibleArgs);
    if (v.ok === true) return { kind: "pass" };
    if (v.ok === "unusable") return { kind: "unusable", why: v.why };
    return { kind: "invalid", errors: v.errors, enforced: this.mode === "enforce" };
  }
}
