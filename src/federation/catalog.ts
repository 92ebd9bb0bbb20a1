// What a federated endpoint has shown its clients, so a call can find its way back: the prefixed names of
// tools and prompts (a shortened one cannot be split apart, names.ts) and the URIs of resources (the first
// upstream to list a URI keeps it, a later one gets it rewritten, uris.ts; a URI that has the rewritten form
// already is always rewritten, so that it leads back to the member that listed it). Filled as lists are served and
// bounded by them: a member's first page replaces what it listed before.
import { federatedName, splitFederatedName, type FederatedEntry } from "./names.js";
import { parseRewrittenUri, rewritable, rewriteUri, type UpstreamUri } from "./uris.js";

type Item = Record<string, unknown>;

export class FederatedCatalog {
  /** Prefixed tool or prompt name → its upstream and its own name, per list kind. */
  private readonly names = new Map<string, Map<string, FederatedEntry>>();
  /** A URI as an upstream listed it → the upstream that keeps it unchanged (the first to list it). */
  private readonly uriOwners = new Map<string, string>();

  /** A member's first page of a list: what it listed before goes. */
  restart(kind: string, upstream: string): void {
    const names = this.names.get(kind);
    if (names) for (const [key, entry] of names) if (entry.upstream === upstream) names.delete(key);
    if (kind === "resources")
      for (const [uri, owner] of this.uriOwners) if (owner === upstream) this.uriOwners.delete(uri);
  }

  /**
   * A member's items as clients see them (kind: the list's result key), remembered for the calls back. A resource
   * another member listed first under a URI that cannot be rewritten (uris.ts rewritable) is left out: no URI
   * would lead back to it.
   */
  present(kind: string, upstream: string, items: readonly unknown[]): unknown[] {
    return items.flatMap((item) => {
      if (typeof item !== "object" || item === null) return [item];
      const it = item as Item;
      if ((kind === "tools" || kind === "prompts") && typeof it.name === "string") {
        const shown = federatedName(upstream, it.name);
        let names = this.names.get(kind);
        if (!names) this.names.set(kind, (names = new Map()));
        names.set(shown, { upstream, original: it.name });
        return [{ ...it, name: shown }];
      }
      if (kind === "resources" && typeof it.uri === "string") {
        const uri = this.clientUri(upstream, it.uri);
        return uri === undefined ? [] : [{ ...it, uri }];
      }
      return [item];
    });
  }

  private clientUri(upstream: string, uri: string): string | undefined {
    // A member's own URI of the rewritten form would lead a read to the member it names: it is rewritten too.
    if (parseRewrittenUri(uri) !== undefined) return rewriteUri(upstream, uri);
    const owner = this.uriOwners.get(uri);
    if (owner === undefined) this.uriOwners.set(uri, upstream);
    if (owner === undefined || owner === upstream) return uri;
    return rewritable(uri) ? rewriteUri(upstream, uri) : undefined;
  }

  /** The upstream and own name of a tool or prompt a client names; an unshortened name works unlisted too. */
  resolve(kind: string, shown: string, members: readonly string[]): FederatedEntry | undefined {
    const known = this.names.get(kind)?.get(shown);
    if (known) return known;
    const split = splitFederatedName(shown, members);
    return split && { upstream: split.upstream, original: split.rest };
  }

  /** The upstream and own URI of a resource a client names: a rewritten one says it, else whoever listed it. */
  resolveUri(uri: string): UpstreamUri | undefined {
    const rewritten = parseRewrittenUri(uri);
    if (rewritten) return rewritten;
    const owner = this.uriOwners.get(uri);
    return owner === undefined ? undefined : { upstream: owner, uri };
  }
}
