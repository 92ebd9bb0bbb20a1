// The list changes of a federated endpoint, told to its listeners at most once a second.
// Why a feed per endpoint, and why it waits a moment: every listening client has its own listens on the
// members (each under its own credentials), so one upstream change arrives once per listening client, a few
// milliseconds apart. The feed gathers what arrives within SETTLE_MS into one flush that reaches every
// listener, and never flushes twice within intervalMs; a burst of changes upstream (a server registering
// twenty tools) is one notification per list kind, and a client re-lists once.
// Pure: time comes from the injected clock.

/** The lists whose changes are relayed, as the 2026-07-28 listen filter names them. */
export const LIST_KINDS = ["toolsListChanged", "promptsListChanged", "resourcesListChanged"] as const;
export type ListKind = (typeof LIST_KINDS)[number];

/** The legacy notification of each list kind (what a listen stream carries, in both eras). */
export const LIST_CHANGED_METHOD: Readonly<Record<ListKind, string>> = {
  toolsListChanged: "notifications/tools/list_changed",
  promptsListChanged: "notifications/prompts/list_changed",
  resourcesListChanged: "notifications/resources/list_changed",
};

/** The list kind a notification method announces, if it is one. */
export function listKindOf(method: unknown): ListKind | undefined {
  return LIST_KINDS.find((k) => LIST_CHANGED_METHOD[k] === method);
}

/** How long the feed waits for the same change to arrive on the other listeners' member listens. */
export const SETTLE_MS = 100;

export interface FeedClock {
  now(): number;
  /** Runs `fn` after `ms`; the handle is passed to cancel. */
  schedule(fn: () => void, ms: number): unknown;
  cancel(handle: unknown): void;
}

const realFeedClock: FeedClock = {
  now: () => Date.now(),
  schedule: (fn, ms) => setTimeout(fn, ms).unref(),
  cancel: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

type Listener = (kinds: ReadonlySet<ListKind>) => void;

export class ChangeFeed {
  private readonly listeners = new Set<Listener>();
  private readonly pending = new Set<ListKind>();
  private timer: unknown;
  private lastFlush = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly intervalMs: number,
    private readonly clock: FeedClock = realFeedClock,
  ) {}

  /** `listener` hears every flush from now on; the returned function stops that. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.reset();
    };
  }

  get size(): number {
    return this.listeners.size;
  }

  /** A member said that its `kind` list changed (or it left or came back, which changes the merged list). */
  changed(kind: ListKind): void {
    if (this.listeners.size === 0) return;
    this.pending.add(kind);
    if (this.timer !== undefined) return;
    const at = Math.max(this.clock.now() + SETTLE_MS, this.lastFlush + this.intervalMs);
    this.timer = this.clock.schedule(() => this.flush(), at - this.clock.now());
  }

  private flush(): void {
    this.timer = undefined;
    this.lastFlush = this.clock.now();
    const kinds = new Set(this.pending);
    this.pending.clear();
    for (const l of [...this.listeners]) l(kinds);
  }

  private reset(): void {
    if (this.timer !== undefined) this.clock.cancel(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  close(): void {
    this.listeners.clear();
    this.reset();
  }
}
