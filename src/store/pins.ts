// Pinned definitions, per upstream, in the shared store (docs/pinning.md): the digests approved, the changes
// pending approval, and a version that moves on every write, so each replica re-reads an upstream's pins only
// when they changed (one GET per check; see catalog/pin-registry.ts). The memory form serves one process; the
// Redis form (redis-pins.ts) every replica and the `pins` command.
import type { JsonObject } from "../protocol/json.js";

/** A definition as stored: its digest, its pinned part when small enough to keep (for diffs), when, and why. */
export interface PinRecord {
  digest: string;
  definition?: JsonObject | undefined;
  /** When it was seen or approved (ms). */
  at: number;
  /** What approved it (`first-use`, `policy-allow`, `cli`) or, pending, what it is (`new`, `changed`). */
  note: string;
}

export interface PinSnapshot {
  /** Moves on every write; equal versions hold equal pins. */
  version: string;
  /** Some listing was pinned whole on first use (or something was approved): no more trust on first use. */
  seeded: boolean;
  approved: Map<string, PinRecord>;
  pending: Map<string, PinRecord>;
}

/** Most pending changes kept per upstream: a flood of new tools stops being recorded (still hidden under hide). */
export const MAX_PENDING = 256;
/** Most approved pins kept per upstream. */
export const MAX_PINS = 4096;

export interface PinStore {
  version(upstream: string): Promise<string>;
  load(upstream: string): Promise<PinSnapshot>;
  /** Pins every given definition if the upstream was never seeded; true when this call seeded it. */
  seed(upstream: string, pins: ReadonlyMap<string, PinRecord>): Promise<boolean>;
  /**
   * Records a pending change: "added" when the tool had no pending change with this digest (so it is counted
   * once across replicas), "known" when it had, "full" when MAX_PENDING changes already wait.
   */
  addPending(upstream: string, tool: string, record: PinRecord): Promise<"added" | "known" | "full">;
  /** Approves a definition: its pin set, its pending change gone. False when MAX_PINS are kept already. */
  approve(upstream: string, tool: string, record: PinRecord): Promise<boolean>;
  /** Every upstream with pins or pending changes (for `pins list`). */
  upstreams(): Promise<string[]>;
  close(): Promise<void>;
}

/** One process's pins (tasks.store memory): approvals come from the config, or from this process's policy. */
export class MemoryPinStore implements PinStore {
  private readonly state = new Map<string, PinSnapshot>();
  private seq = 0;

  private of(upstream: string): PinSnapshot {
    let s = this.state.get(upstream);
    if (!s) {
      s = { version: "0", seeded: false, approved: new Map(), pending: new Map() };
      this.state.set(upstream, s);
    }
    return s;
  }

  private bump(s: PinSnapshot): void {
    s.version = String(++this.seq);
  }

  version(upstream: string): Promise<string> {
    return Promise.resolve(this.of(upstream).version);
  }

  load(upstream: string): Promise<PinSnapshot> {
    const s = this.of(upstream);
    return Promise.resolve({ ...s, approved: new Map(s.approved), pending: new Map(s.pending) });
  }

  seed(upstream: string, pins: ReadonlyMap<string, PinRecord>): Promise<boolean> {
    const s = this.of(upstream);
    if (s.seeded) return Promise.resolve(false);
    s.seeded = true;
    for (const [tool, record] of pins) if (s.approved.size < MAX_PINS) s.approved.set(tool, record);
    this.bump(s);
    return Promise.resolve(true);
  }

  addPending(upstream: string, tool: string, record: PinRecord): Promise<"added" | "known" | "full"> {
    const s = this.of(upstream);
    const had = s.pending.get(tool);
    if (had?.digest === record.digest) return Promise.resolve("known");
    if (!had && s.pending.size >= MAX_PENDING) return Promise.resolve("full");
    s.pending.set(tool, record);
    this.bump(s);
    return Promise.resolve("added");
  }

  approve(upstream: string, tool: string, record: PinRecord): Promise<boolean> {
    const s = this.of(upstream);
    if (!s.approved.has(tool) && s.approved.size >= MAX_PINS) return Promise.resolve(false);
    s.approved.set(tool, record);
    s.pending.delete(tool);
    s.seeded = true;
    this.bump(s);
    return Promise.resolve(true);
  }

  upstreams(): Promise<string[]> {
    return Promise.resolve([...this.state.keys()]);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
