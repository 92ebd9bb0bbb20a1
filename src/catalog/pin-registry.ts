// Pinned definitions at run time (docs/pinning.md). One registry per process, over the shared pin store: it
// keeps each upstream's pins as last read (re-read when the store's version for the upstream moved: one GET per
// check, so an approval made on any replica, or by `mcp-task-gateway pins approve`, applies on the next list or
// call everywhere), and what the upstream lists now. Its two answers are synchronous, from what it holds:
//   checkList(upstream, tools) -> { served, hidden, changes }   (a tools/list page, the upstream's own definitions)
//   callAllowed(upstream, tool) -> ok | tool_changed            (under hide, against the definition listed now)
// so a list answer is edited without a promise; `refresh`, `seed` and `listedWhole` (awaited by the pinning step
// before) do the reading.
import type { PinningPolicy } from "../config/pinning.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { PinRecord, PinSnapshot, PinStore } from "../store/pins.js";
import { definitionDiff, type DefinitionDiff } from "./definition-diff.js";
import { seenDefinition, seenDefinitions, type SeenDefinition } from "./definition-digest.js";

/** An upstream's pinning settings in force (upstreams.<name>.pinning, .pins, .pinningListMaxAgeMs). */
export interface PinningSettings {
  policy: PinningPolicy;
  /** Pins from the config: they take precedence over the store's, and with any, nothing is trusted on first use. */
  pins: Readonly<Record<string, string>>;
  listMaxAgeMs: number;
}

type ChangeKind = "new" | "changed";

/** A definition that differs from its approved one (or has none). */
export interface PinChange {
  tool: string;
  kind: ChangeKind;
  digest: string;
  /** The approved digest it replaces; undefined for a new tool. */
  approved: string | undefined;
}

/** What the registry reports, wired by the composition root to the log, the audit trail and the metrics. */
export interface PinEvents {
  /** A change was seen (recorded once across replicas, or approved at once under allow). */
  changed(upstream: string, change: PinChange, policy: PinningPolicy, diff: DefinitionDiff): void;
  /** A definition was approved here: on first use, or by the allow policy. */
  approved(upstream: string, tool: string, digest: string, via: "first-use" | "policy"): void;
  /** MAX_PENDING changes already wait: this one is not recorded (still hidden under hide). */
  overflow(upstream: string, tool: string): void;
  /** The store could not be written or read. */
  failed(upstream: string, err: unknown): void;
}

/** A pending change as /status and `pins list` show it. */
export interface PendingView {
  tool: string;
  kind: ChangeKind;
  digest: string;
  approved: string | undefined;
  at: number;
  diff: DefinitionDiff;
}

/** What the upstream lists now: each tool's digest, from the last listing (relayed or the gateway's own). */
interface Listed {
  digests: Map<string, string>;
  /** When the gateway's own full listing was read (ms); 0 before one. */
  fullAt: number;
}

interface Mirror {
  snapshot: PinSnapshot;
  listed: Listed;
  /** Changes reported by this process (tool + digest), so a repeated listing reports nothing again. */
  reported: Set<string>;
}

const MAX_REPORTED = 4096;
/** Most tool names kept of what an upstream lists now (a flood of names starts it afresh; a call then lists again). */
const MAX_LISTED = 8192;

export type CallVerdict = { ok: true } | { ok: false; digest: string | undefined };

export class PinRegistry {
  private readonly mirrors = new Map<string, Mirror>();
  private readonly reading = new Map<string, Promise<void>>();

  constructor(
    private readonly store: PinStore,
    /** The settings in force for an upstream (live: a reload changes them); undefined when it has no pinning. */
    private readonly settingsOf: (upstream: string) => PinningSettings | undefined,
    private readonly events: PinEvents,
    private readonly now: () => number,
  ) {}

  settings(upstream: string): PinningSettings | undefined {
    return this.settingsOf(upstream);
  }

  private mirror(upstream: string): Mirror {
    let m = this.mirrors.get(upstream);
    if (!m) {
      m = {
        snapshot: { version: "", seeded: false, approved: new Map(), pending: new Map() },
        listed: { digests: new Map(), fullAt: 0 },
        reported: new Set(),
      };
      this.mirrors.set(upstream, m);
    }
    return m;
  }

  /** Re-reads the upstream's pins when the store's version moved (concurrent callers share one read). */
  refresh(upstream: string): Promise<void> {
    const running = this.reading.get(upstream);
    if (running) return running;
    const work = (async () => {
      const m = this.mirror(upstream);
      const version = await this.store.version(upstream);
      if (version !== m.snapshot.version) m.snapshot = await this.store.load(upstream);
    })().finally(() => this.reading.delete(upstream));
    this.reading.set(upstream, work);
    return work;
  }

  /** Whether the upstream is yet to be pinned on first use: nothing seeded, nothing in the config. */
  needsSeed(upstream: string): boolean {
    const settings = this.settingsOf(upstream);
    return settings !== undefined && Object.keys(settings.pins).length === 0 && !this.mirror(upstream).snapshot.seeded;
  }

  /** Whether a call needs the gateway's own listing first (hide, and the last one is older than allowed). */
  needsListing(upstream: string): boolean {
    const settings = this.settingsOf(upstream);
    if (settings?.policy !== "hide") return false;
    const { fullAt } = this.mirror(upstream).listed;
    return fullAt === 0 || this.now() - fullAt >= settings.listMaxAgeMs;
  }

  /**
   * Trust on first use: the upstream's whole listing (every page, read by the gateway) is approved as it is,
   * once across replicas (the first to seed wins; the others read its pins).
   */
  async seed(upstream: string, tools: readonly unknown[]): Promise<void> {
    const at = this.now();
    const pins = new Map<string, PinRecord>();
    for (const d of seenDefinitions(tools))
      pins.set(d.name, { digest: d.digest, definition: d.definition, at, note: "first-use" });
    if (await this.store.seed(upstream, pins))
      for (const [tool, p] of pins) this.events.approved(upstream, tool, p.digest, "first-use");
    await this.refresh(upstream);
  }

  /** The gateway's own full listing: what the upstream lists now replaces what was known, then the check runs. */
  listedWhole(upstream: string, tools: readonly unknown[]): void {
    const m = this.mirror(upstream);
    m.listed = { digests: new Map(), fullAt: this.now() };
    this.checkList(upstream, tools);
  }

  private approvedDigest(upstream: string, tool: string, settings: PinningSettings): string | undefined {
    return settings.pins[tool] ?? this.mirror(upstream).snapshot.approved.get(tool)?.digest;
  }

  /**
   * One tools/list page, the upstream's own definitions: what to serve, what to hide, and what changed. Under
   * warn and allow everything is served; under hide a tool is served only when its definition is approved.
   */
  checkList(
    upstream: string,
    tools: readonly unknown[],
  ): { served: unknown[]; hidden: string[]; changes: PinChange[] } {
    const settings = this.settingsOf(upstream);
    if (!settings) return { served: [...tools], hidden: [], changes: [] };
    const m = this.mirror(upstream);
    const served: unknown[] = [];
    const hidden: string[] = [];
    const changes: PinChange[] = [];
    for (const item of tools) {
      const def = seenDefinition(item);
      if (!def) {
        // No name, or too deep to digest: nothing could approve it.
        if (settings.policy === "hide") hidden.push(isRecord(item) && typeof item.name === "string" ? item.name : "");
        else served.push(item);
        continue;
      }
      if (m.listed.digests.size >= MAX_LISTED && !m.listed.digests.has(def.name))
        m.listed = { digests: new Map(), fullAt: 0 };
      m.listed.digests.set(def.name, def.digest);
      const approved = this.approvedDigest(upstream, def.name, settings);
      if (approved === def.digest) {
        served.push(item);
        continue;
      }
      const change: PinChange = {
        tool: def.name,
        kind: approved === undefined ? "new" : "changed",
        digest: def.digest,
        approved,
      };
      changes.push(change);
      if (settings.policy === "hide") hidden.push(def.name);
      else served.push(item);
      this.report(upstream, m, settings, change, def);
    }
    return { served, hidden, changes };
  }

  /** Under hide: a call goes on only to a tool listed now with an approved definition. */
  callAllowed(upstream: string, tool: string): CallVerdict {
    const settings = this.settingsOf(upstream);
    if (settings?.policy !== "hide") return { ok: true };
    const digest = this.mirror(upstream).listed.digests.get(tool);
    return digest !== undefined && digest === this.approvedDigest(upstream, tool, settings)
      ? { ok: true }
      : { ok: false, digest };
  }

  /** Records a change once (per process here, once across replicas in the store), and approves it under allow. */
  private report(upstream: string, m: Mirror, settings: PinningSettings, change: PinChange, def: SeenDefinition): void {
    const key = `${change.tool}\0${change.digest}`;
    if (m.reported.has(key) || m.snapshot.pending.get(change.tool)?.digest === change.digest) return;
    if (m.reported.size >= MAX_REPORTED) m.reported.clear();
    m.reported.add(key);
    const before = m.snapshot.approved.get(change.tool)?.definition;
    const diff = definitionDiff(before, def.definition);
    const record: PinRecord = { digest: def.digest, definition: def.definition, at: this.now(), note: change.kind };
    const write = async (): Promise<void> => {
      if (settings.policy === "allow") {
        if (await this.store.approve(upstream, change.tool, { ...record, note: "policy-allow" })) {
          this.events.changed(upstream, change, settings.policy, diff);
          this.events.approved(upstream, change.tool, change.digest, "policy");
        } else this.events.overflow(upstream, change.tool);
        return;
      }
      const outcome = await this.store.addPending(upstream, change.tool, record);
      if (outcome === "added") this.events.changed(upstream, change, settings.policy, diff);
      else if (outcome === "full") this.events.overflow(upstream, change.tool);
    };
    write().catch((err: unknown) => {
      m.reported.delete(key);
      this.events.failed(upstream, err);
    });
  }

  /** The pending changes of these upstreams as the store holds them now (read again where their version moved). */
  async pendingNow(upstreams: readonly string[]): Promise<Map<string, PendingView[]>> {
    await Promise.all(upstreams.map((u) => this.refresh(u)));
    const all = this.pending();
    return new Map(upstreams.map((u) => [u, all.get(u) ?? []]));
  }

  /** Every pending change of the upstreams with pinning, with its diff against the approved definition. */
  pending(): Map<string, PendingView[]> {
    const out = new Map<string, PendingView[]>();
    for (const [upstream, m] of this.mirrors) {
      const settings = this.settingsOf(upstream);
      if (!settings) continue;
      out.set(upstream, pendingViews(m.snapshot, settings.pins));
    }
    return out;
  }
}

/** The pending changes of one snapshot, each diffed against its approved definition (config pins first). */
export function pendingViews(snapshot: PinSnapshot, configPins: Readonly<Record<string, string>> = {}): PendingView[] {
  const views: PendingView[] = [];
  for (const [tool, p] of snapshot.pending) {
    const approvedRecord = snapshot.approved.get(tool);
    const approved = configPins[tool] ?? approvedRecord?.digest;
    // A change since approved (its digest now approved) is no longer pending.
    if (approved === p.digest) continue;
    const before: JsonObject | undefined = approvedRecord?.digest === approved ? approvedRecord?.definition : undefined;
    views.push({
      tool,
      kind: approved === undefined ? "new" : "changed",
      digest: p.digest,
      approved,
      at: p.at,
      diff: definitionDiff(before, p.definition),
    });
  }
  return views.sort((a, b) => a.tool.localeCompare(b.tool));
}
