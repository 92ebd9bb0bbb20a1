// Why: one federated endpoint lists the tools and prompts of several upstreams, so two upstreams'
// `echo` must stay apart and a call must find its way back. Every name of upstream `u` is shown as
// `u__<name>` (always prefixed). MCP tool names are 1–128 characters of A–Z a–z 0–9 _ - . so a
// prefixed name that breaks that rule is sanitized and shortened deterministically, keeping the
// `u__` prefix and ending in `_` + a hash of the original; such a name cannot be inverted by string
// operations, so calls are routed back through a NameIndex built from the last list.
// Pure: no I/O.
import { createHash } from "node:crypto";
import { UPSTREAM_NAME } from "../config/schema.js";

/** Between an upstream's name and the name it gave. */
const SEPARATOR = "__";
/** The longest tool name MCP allows. */
export const MAX_NAME_LENGTH = 128;
const VALID_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const INVALID_CHAR = /[^A-Za-z0-9_.-]/g;
const HASH_CHARS = 8;
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** A name as an upstream gave it. */
export interface FederatedEntry {
  readonly upstream: string;
  readonly original: string;
}

/** 8 base32 characters (40 bits) of the SHA-256 of the upstream and name, kept apart by a character no upstream name has. */
function shortHash(upstream: string, name: string): string {
  const bytes = createHash("sha256").update(`${upstream}\n${name}`).digest();
  let bits = 0;
  for (let i = 0; i < 5; i++) bits = bits * 256 + (bytes[i] ?? 0);
  let out = "";
  for (let i = HASH_CHARS - 1; i >= 0; i--) out += BASE32[Math.floor(bits / 32 ** i) % 32];
  return out;
}

/**
 * The name clients see for `name` of `upstream`: `upstream__name` when that is a valid MCP tool name, otherwise
 * that text with every disallowed character replaced by `_`, cut to leave room for `_` + 8 hash characters.
 * `upstream` must be a configured upstream name (UPSTREAM_NAME); anything else is a bug and throws.
 */
export function federatedName(upstream: string, name: string): string {
  if (!UPSTREAM_NAME.test(upstream)) throw new RangeError(`not an upstream name: ${JSON.stringify(upstream)}`);
  const plain = upstream + SEPARATOR + name;
  if (VALID_NAME.test(plain)) return plain;
  const kept = plain.replace(INVALID_CHAR, "_").slice(0, MAX_NAME_LENGTH - 1 - HASH_CHARS);
  return `${kept}_${shortHash(upstream, name)}`;
}

/**
 * The member whose `name__` prefix `federated` starts with, and the text after it; the longest member name is tried
 * first (names may contain `_`). The rest is the upstream's own name only if it was not shortened: route calls
 * through a NameIndex, and use this where only the upstream matters.
 */
export function splitFederatedName(
  federated: string,
  members: readonly string[],
): { upstream: string; rest: string } | undefined {
  let best: string | undefined;
  for (const member of members) {
    if (federated.startsWith(member + SEPARATOR) && (best === undefined || member.length > best.length)) best = member;
  }
  return best === undefined ? undefined : { upstream: best, rest: federated.slice(best.length + SEPARATOR.length) };
}

/**
 * Federated name → the upstream and name it stands for, built from one list (tools or prompts) of every member.
 * Bounded by that list: build a new index from each complete list and replace the old one whole, never add to it.
 * Should two entries get the same federated name (a shortened name meeting another, or members `a` and `a__b`
 * both giving `a__b__x`), the first in the order given keeps it and the others are in `collisions`: leave them
 * out of the list shown to clients.
 */
export class NameIndex {
  private readonly byName = new Map<string, FederatedEntry>();
  readonly collisions: readonly (FederatedEntry & { federated: string })[];

  constructor(entries: Iterable<FederatedEntry>) {
    const collisions: (FederatedEntry & { federated: string })[] = [];
    for (const { upstream, original } of entries) {
      const federated = federatedName(upstream, original);
      const held = this.byName.get(federated);
      if (held === undefined) this.byName.set(federated, { upstream, original });
      else if (held.upstream !== upstream || held.original !== original) {
        collisions.push({ federated, upstream, original });
      }
    }
    this.collisions = collisions;
  }

  /** How many federated names the index holds. */
  get size(): number {
    return this.byName.size;
  }

  /** The upstream and its own name for a name a client used, or undefined when the last list did not have it. */
  resolve(federated: string): FederatedEntry | undefined {
    return this.byName.get(federated);
  }
}
