// Why: resources are named by URI, not by a name we can prefix, and a federated endpoint must send each
// resources/read (and subscription) to the upstream that serves it. Two ways were weighed:
//   - rewrite every URI to one that names its upstream: routing is string work, but every client sees URIs no
//     upstream gave, and links between resources (a URI inside a text, a resource_link in a tool result) break;
//   - keep URIs as the upstreams gave them and route by an index built from the last resources/list (URI →
//     upstream): clients see the real URIs, but two upstreams may list the same one.
// Chosen: the index, with rewriting only for that clash. Members are taken in order; the first to list a URI keeps
// it as is, and a later member listing the same URI shows it as `mcp-fed://<upstream>/<encodeURIComponent(uri)>`,
// so both stay readable and a read of the rewritten one goes back to its upstream. A URI a member lists that has
// that form already is rewritten the same way (a read would otherwise go to the member it names). A rewritten URI names its
// upstream, so it still routes after the index is rebuilt. Build the index from complete lists (every page of
// every member) and replace it whole each time: it is as big as the last list.
// Pure: no I/O.
import { UPSTREAM_NAME } from "../config/schema.js";

const SCHEME = "mcp-fed://";

/** A URI as an upstream gave it. */
export interface UpstreamUri {
  readonly upstream: string;
  readonly uri: string;
}

/** A lone surrogate: a code unit no URI (nor encodeURIComponent, which throws on it) can carry. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Whether `uri` can be rewritten: every string can, but one with a lone surrogate (from a JSON "\ud800"). */
export function rewritable(uri: string): boolean {
  return !LONE_SURROGATE.test(uri);
}

/**
 * `uri` of `upstream` as a URI that names its upstream: mcp-fed://<upstream>/<encodeURIComponent(uri)>. Throws
 * RangeError when `upstream` is not an upstream name or `uri` is not rewritable.
 */
export function rewriteUri(upstream: string, uri: string): string {
  if (!UPSTREAM_NAME.test(upstream)) throw new RangeError(`not an upstream name: ${JSON.stringify(upstream)}`);
  if (!rewritable(uri)) throw new RangeError("a URI with a lone surrogate cannot be rewritten");
  return `${SCHEME}${upstream}/${encodeURIComponent(uri)}`;
}

/** The upstream and its URI for a URI made by rewriteUri; undefined for anything else (also a non-canonical encoding). */
export function parseRewrittenUri(uri: string): UpstreamUri | undefined {
  if (!uri.startsWith(SCHEME)) return undefined;
  const rest = uri.slice(SCHEME.length);
  const slash = rest.indexOf("/");
  if (slash < 0) return undefined;
  const upstream = rest.slice(0, slash);
  const encoded = rest.slice(slash + 1);
  if (!UPSTREAM_NAME.test(upstream)) return undefined;
  // Canonical only: what rewriteUri makes of the decoded URI. A lone surrogate left raw in the encoded part is not
  // (and would throw in encodeURIComponent), nor is a malformed escape.
  if (!rewritable(encoded)) return undefined;
  let original: string;
  try {
    original = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  return encodeURIComponent(original) === encoded ? { upstream, uri: original } : undefined;
}

/**
 * Which upstream serves a URI a client uses, and which URI clients see for each upstream's URI, from one
 * resources/list of every member (in member order: the first to list a URI keeps it). Should a client-facing URI
 * be taken twice even so (an upstream listing an `mcp-fed://` URI itself), or a clashing URI cannot be rewritten (a
 * lone surrogate), the later one is in `collisions` and has no client-facing URI: leave it out of the list.
 */
export class UriIndex {
  private readonly byClientUri = new Map<string, UpstreamUri>();
  private readonly clientUris = new Map<string, Map<string, string>>();
  readonly collisions: readonly UpstreamUri[];

  constructor(lists: Iterable<{ readonly upstream: string; readonly uris: readonly string[] }>) {
    const collisions: UpstreamUri[] = [];
    for (const { upstream, uris } of lists) {
      let own = this.clientUris.get(upstream);
      if (own === undefined) this.clientUris.set(upstream, (own = new Map()));
      for (const uri of uris) {
        if (own.has(uri)) continue;
        // A URI of the rewritten form is rewritten too, else a route would take it for the member it names. A clashing
        // URI that cannot be rewritten has no client-facing URI.
        const clash = this.byClientUri.has(uri) || parseRewrittenUri(uri) !== undefined;
        const clientUri = !clash ? uri : rewritable(uri) ? rewriteUri(upstream, uri) : undefined;
        if (clientUri === undefined || this.byClientUri.has(clientUri)) {
          collisions.push({ upstream, uri });
          continue;
        }
        this.byClientUri.set(clientUri, { upstream, uri });
        own.set(uri, clientUri);
      }
    }
    this.collisions = collisions;
  }

  /** The URI clients see for `uri` of `upstream`, or undefined when that upstream did not list it. */
  clientUri(upstream: string, uri: string): string | undefined {
    return this.clientUris.get(upstream)?.get(uri);
  }

  /**
   * The upstream and its own URI for a URI a client read or subscribed to: from the last list, or else from a
   * rewritten URI naming a member of it; undefined when neither knows it.
   */
  route(clientUri: string): UpstreamUri | undefined {
    const listed = this.byClientUri.get(clientUri);
    if (listed !== undefined) return listed;
    const parsed = parseRewrittenUri(clientUri);
    return parsed !== undefined && this.clientUris.has(parsed.upstream) ? parsed : undefined;
  }
}
