// Tool and prompt overrides (upstreams.<name>.tools / .prompts, federated.<name>.tools): what a client is shown
// of each tool, and how its call is mapped back to the upstream's. Pure: no I/O, no clock.
//
// ORDER (for whoever hooks in next to this, e.g. pinned definitions, issue 36 item 3):
//   1. overrides first: `catalogView` turns the upstream's own definitions into the listed ones, `mapCall` turns a
//      client's call into the upstream's (its name back, pinned values merged in, defaults filled);
//   2. then validation (validator.ts): a call's arguments, as the client sent them with defaults filled, against
//      the tool as listed after overrides (`viewTool`);
//   3. pinning of definitions applies to the upstream's own definitions: it sees a tools/list result before
//      `catalogView`, and a call after `mapCall` (by its upstream name).
import type { PromptOverride, ToolOverride } from "../config/catalog.js";
import { isGlobKey } from "../config/catalog.js";
import { globToRegExp, type GlobMatcher } from "../config/glob.js";
import { isRecord, type JsonObject } from "../protocol/json.js";

/** Why a call is refused before it goes anywhere. */
export type CallRefusal =
  { reason: "unknown_tool"; tool: string } | { reason: "pinned_argument"; tool: string; argument: string };

/** A call mapped to the upstream's tool. */
export interface MappedCall {
  /** The upstream's own name for the tool. */
  upstreamName: string;
  /** The arguments as the client sent them, defaults filled: what is validated against the listed schema. */
  visibleArgs: JsonObject;
  /** What goes upstream: `visibleArgs` with the pinned values merged over them. */
  args: JsonObject;
  /** The override that applied, if any. */
  override: ToolOverride | undefined;
}

interface Keyed<T> {
  exact: Map<string, T>;
  globs: Array<{ key: string; glob: GlobMatcher; value: T }>;
  /** upstream name → client name, and back. */
  renamedTo: Map<string, string>;
  renamedFrom: Map<string, string>;
}

function keyed<T extends { name?: string | undefined }>(block: Readonly<Record<string, T>> | undefined): Keyed<T> {
  const out: Keyed<T> = { exact: new Map(), globs: [], renamedTo: new Map(), renamedFrom: new Map() };
  for (const [key, value] of Object.entries(block ?? {})) {
    if (isGlobKey(key)) out.globs.push({ key, glob: globToRegExp(key), value });
    else {
      out.exact.set(key, value);
      if (value.name !== undefined && value.name !== key) {
        out.renamedTo.set(key, value.name);
        out.renamedFrom.set(value.name, key);
      }
    }
  }
  return out;
}

function lookup<T>(k: Keyed<T>, upstreamName: string): T | undefined {
  return k.exact.get(upstreamName) ?? k.globs.find((g) => g.glob.test(upstreamName))?.value;
}

/**
 * The client's name → the upstream's, or undefined when the client may not use that name: it is the upstream
 * name of a renamed item (and no other item was renamed to it).
 */
function upstreamNameOf<T>(k: Keyed<T>, clientName: string): string | undefined {
  const from = k.renamedFrom.get(clientName);
  if (from !== undefined) return from;
  return k.renamedTo.has(clientName) ? undefined : clientName;
}

/** A key compared as a person would read it: a client sending `Owner` or `ｏwner` for a pinned `owner` is refused. */
function loose(key: string): string {
  // Plain ASCII (nearly every key) needs no normalization.
  return /^[\x00-\x7f]*$/.test(key) ? key.toLowerCase() : key.normalize("NFKC").toLowerCase();
}

/** Each override's pinned names, compared loosely, made once. */
const loosePins = new WeakMap<object, Set<string>>();

function pinsOf(pin: Readonly<Record<string, unknown>>): Set<string> {
  let set = loosePins.get(pin);
  if (!set) loosePins.set(pin, (set = new Set(Object.keys(pin).map(loose))));
  return set;
}

function withDescription(
  def: JsonObject,
  o: { description?: string | undefined; appendDescription?: string | undefined },
): JsonObject {
  if (o.description === undefined && o.appendDescription === undefined) return def;
  const base = o.description ?? (typeof def.description === "string" ? def.description : "");
  const description =
    o.appendDescription === undefined ? base : base === "" ? o.appendDescription : `${base}\n\n${o.appendDescription}`;
  return { ...def, description };
}

/** The listed inputSchema: pinned arguments gone, defaults shown, narrowed arguments merged. */
export function viewInputSchema(schema: unknown, o: ToolOverride): unknown {
  if (!o.pin && !o.defaults && !o.schema) return schema;
  const base = isRecord(schema) ? schema : { type: "object" };
  const properties: JsonObject = isRecord(base.properties) ? { ...base.properties } : {};
  const pinned = new Set(Object.keys(o.pin ?? {}));
  const defaulted = new Set(Object.keys(o.defaults ?? {}));
  for (const arg of pinned) delete properties[arg];
  for (const [arg, narrow] of Object.entries(o.schema ?? {})) {
    if (pinned.has(arg)) continue;
    const own = properties[arg];
    properties[arg] = { ...(isRecord(own) ? own : {}), ...narrow };
  }
  for (const [arg, value] of Object.entries(o.defaults ?? {})) {
    const own = properties[arg];
    properties[arg] = { ...(isRecord(own) ? own : {}), default: value };
  }
  const out: JsonObject = { ...base, properties };
  if (Array.isArray(base.required)) {
    const required = base.required.filter((r) => typeof r !== "string" || (!pinned.has(r) && !defaulted.has(r)));
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  return out;
}

export class ToolCatalog {
  private readonly tools: Keyed<ToolOverride>;
  private readonly prompts: Keyed<PromptOverride>;

  constructor(
    tools: Readonly<Record<string, ToolOverride>> | undefined,
    prompts?: Readonly<Record<string, PromptOverride>> | undefined,
  ) {
    this.tools = keyed(tools);
    this.prompts = keyed(prompts);
    this.emptyTools = Object.keys(tools ?? {}).length === 0;
    this.emptyPrompts = Object.keys(prompts ?? {}).length === 0;
  }

  /** Nothing to change on tools (lists stream through, calls go as they came). */
  readonly emptyTools: boolean;
  readonly emptyPrompts: boolean;

  /** The override of a tool, by the upstream's name. */
  overrideOf(upstreamName: string): ToolOverride | undefined {
    return lookup(this.tools, upstreamName);
  }

  /** One tool as the client is shown it (the upstream's definition in, the listed one out). */
  viewTool(def: JsonObject): JsonObject {
    if (typeof def.name !== "string") return def;
    const o = this.overrideOf(def.name);
    if (!o) return def;
    let out = withDescription({ ...def }, o);
    if (o.name !== undefined) out.name = o.name;
    if (o.title !== undefined) out.title = o.title;
    if (o.annotations) out.annotations = { ...(isRecord(def.annotations) ? def.annotations : {}), ...o.annotations };
    const input = viewInputSchema(def.inputSchema, o);
    if (input !== def.inputSchema) out = { ...out, inputSchema: input };
    return out;
  }

  /**
   * A tools/list page as the client sees it. An upstream tool whose name another tool was renamed to is left out:
   * that name calls the renamed tool (the clash is checked at load for tools the config names, not for others).
   */
  catalogView(tools: readonly unknown[]): unknown[] {
    if (this.emptyTools) return [...tools];
    const out: unknown[] = [];
    for (const t of tools) {
      if (!isRecord(t) || typeof t.name !== "string") out.push(t);
      else if (this.tools.renamedFrom.has(t.name) && !this.tools.renamedTo.has(t.name)) continue;
      else out.push(this.viewTool(t));
    }
    return out;
  }

  /** The upstream's name for a client's tool name; undefined when the client may not use it (renamed away). */
  upstreamTool(clientName: string): string | undefined {
    return upstreamNameOf(this.tools, clientName);
  }

  /** A client's tools/call mapped back to the upstream's tool, or why it is refused. */
  mapCall(clientName: string, args: JsonObject): MappedCall | CallRefusal {
    const upstreamName = upstreamNameOf(this.tools, clientName);
    if (upstreamName === undefined) return { reason: "unknown_tool", tool: clientName };
    const o = this.overrideOf(upstreamName);
    if (!o) return { upstreamName, visibleArgs: args, args, override: undefined };
    const pin = o.pin ?? {};
    const pinnedKeys = Object.keys(pin);
    if (pinnedKeys.length > 0) {
      const pins = pinsOf(pin);
      for (const sent in args)
        if (pins.has(loose(sent))) return { reason: "pinned_argument", tool: clientName, argument: sent };
    }
    let visibleArgs = args;
    for (const [arg, value] of Object.entries(o.defaults ?? {}))
      if (!(arg in visibleArgs)) visibleArgs = { ...visibleArgs, [arg]: value };
    const sent = pinnedKeys.length > 0 ? { ...visibleArgs, ...pin } : visibleArgs;
    return { upstreamName, visibleArgs, args: sent, override: o };
  }

  /** A prompts/list page as the client sees it. */
  promptsView(prompts: readonly unknown[]): unknown[] {
    if (this.emptyPrompts) return [...prompts];
    const out: unknown[] = [];
    for (const p of prompts) {
      if (!isRecord(p) || typeof p.name !== "string") {
        out.push(p);
        continue;
      }
      if (this.prompts.renamedFrom.has(p.name) && !this.prompts.renamedTo.has(p.name)) continue;
      const o = lookup(this.prompts, p.name);
      if (!o) out.push(p);
      else out.push({ ...withDescription(p, o), ...(o.name !== undefined && { name: o.name }) });
    }
    return out;
  }

  /** The upstream's name for a client's prompt name; undefined when renamed away. */
  upstreamPrompt(clientName: string): string | undefined {
    return upstreamNameOf(this.prompts, clientName);
  }
}
