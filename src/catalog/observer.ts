// What the catalog tells the metrics: each call it refused, let through with a warning, or could not validate.
// Only bounded values cross it: a configured upstream name and one of these outcomes.

export type CatalogOutcome =
  /** A call to the upstream's own name of a renamed tool. */
  | "unknown_tool"
  /** A call that sent a pinned argument. */
  | "pinned_argument"
  /** Invalid arguments, refused (validateArguments: enforce, or a narrowed argument). */
  | "invalid_refused"
  /** Invalid arguments, passed on (validateArguments: warn). */
  | "invalid_warned"
  /** The tool's schema is past the gateway's bounds or does not compile: not validated. */
  | "unvalidated";

export interface CatalogObserver {
  call(upstream: string, outcome: CatalogOutcome): void;
}
