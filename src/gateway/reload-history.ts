// What the last reload did (issue 37: an operator who sent SIGHUP sees whether it took): its time, its result and
// its error, on /status and in the metrics (the time of the last success, the count of failures). One per
// gateway, so per process: with --workers, each worker reloads, and records, for itself.
import { redactLine } from "../log/redact.js";
import type { ReloadPlan } from "../reload.js";

/** The most an error shown on /status keeps of a reload's problems. */
const ERROR_CHARS = 1_000;

export interface ReloadOutcome {
  /** When it was tried (ms since the epoch). */
  at: number;
  ok: boolean;
  /** Why it failed (the config's problems, secrets cut); only on a failure. */
  error?: string | undefined;
  /** Changed settings it applied; only on a success. */
  applied?: string[] | undefined;
  /** Changed settings that keep their old value until a restart; only on a success. */
  restart?: string[] | undefined;
}

export class ReloadHistory {
  /** The last reload tried; undefined before the first. */
  last: ReloadOutcome | undefined;
  /** When the config in force was last loaded: the start, then each successful reload. */
  lastSuccessAt: number;
  /** Reloads that failed since the start (the old config stayed). */
  failures = 0;

  constructor(startedAt: number) {
    this.lastSuccessAt = startedAt;
  }

  succeeded(at: number, plan: ReloadPlan): void {
    this.last = { at, ok: true, applied: plan.live, restart: plan.restart };
    this.lastSuccessAt = at;
  }

  failed(at: number, error: string): void {
    // The problems name fields and files; redactLine cuts what could still be a secret (a URL's query, a token).
    const text = redactLine(error);
    this.last = { at, ok: false, error: text.length > ERROR_CHARS ? `${text.slice(0, ERROR_CHARS)}…` : text };
    this.failures += 1;
  }
}
