// Properties of the resource URIs a federated endpoint shows (federation/uris.ts, catalog.ts): a rewritten URI parses
// back to its member and the member's URI, parsing anything never throws and accepts only what rewriting makes, and
// every URI a federated list shows leads back to the member that listed it and that member's own URI.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FederatedCatalog } from "../../src/federation/catalog.js";
import { parseRewrittenUri, rewritable, rewriteUri, UriIndex } from "../../src/federation/uris.js";
import { anyString, utf16String } from "../helpers/arbitraries.js";

const upstreamName = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,31}$/);

describe("rewritten resource URIs (properties)", () => {
  it("a rewritten URI parses back to its upstream and URI; one that cannot be rewritten is refused with a RangeError", () => {
    fc.assert(
      fc.property(upstreamName, fc.oneof(anyString, fc.webUrl(), utf16String({ maxLength: 8 })), (upstream, uri) => {
        if (!rewritable(uri)) {
          expect(() => rewriteUri(upstream, uri)).toThrow(RangeError);
          return;
        }
        expect(parseRewrittenUri(rewriteUri(upstream, uri))).toEqual({ upstream, uri });
      }),
      { numRuns: 2_000 },
    );
  });

  it("every resource URI a federated list shows leads back to its member and the member's URI", () => {
    // Members listing URIs, many of them shared (clashes get rewritten), some with lone surrogates.
    const names = fc.uniqueArray(upstreamName, { maxLength: 4 });
    const lists = names.chain((ns) => {
      const uri = fc.oneof(
        fc.constantFrom("file:///a", "file:///b", "mem://\ud800", "x"),
        utf16String({ maxLength: 4 }),
        // A member may list a URI of the rewritten form itself, naming itself, another member or none.
        fc.constantFrom(...ns, "zz").map((n) => `mcp-fed://${n}/file%3A%2F%2F%2Fa`),
      );
      return fc.tuple(...ns.map((n) => fc.tuple(fc.constant(n), fc.array(uri, { maxLength: 6 }))));
    });
    fc.assert(
      fc.property(lists, (members) => {
        const catalog = new FederatedCatalog();
        const index = new UriIndex(members.map(([upstream, uris]) => ({ upstream, uris })));
        for (const [upstream, uris] of members) {
          const shown = catalog.present(
            "resources",
            upstream,
            uris.map((u) => ({ uri: u })),
          ) as { uri: string }[];
          for (const { uri: clientUri } of shown) {
            const routed = catalog.resolveUri(clientUri);
            expect(routed?.upstream).toBe(upstream);
            expect(uris).toContain(routed?.uri);
          }
          for (const u of uris) {
            const clientUri = index.clientUri(upstream, u);
            if (clientUri !== undefined) expect(index.route(clientUri)).toEqual({ upstream, uri: u });
          }
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it("anything parses without throwing, and what parses is what rewriting it gives", () => {
    const candidate = fc.oneof(
      anyString,
      fc.tuple(fc.oneof(upstreamName, anyString), anyString).map(([u, rest]) => `mcp-fed://${u}/${rest}`),
      fc.tuple(upstreamName, fc.stringMatching(/^(%[0-9a-fA-F]{0,2}|[a-z/])*$/)).map(([u, r]) => `mcp-fed://${u}/${r}`),
    );
    fc.assert(
      fc.property(candidate, (uri) => {
        const parsed = parseRewrittenUri(uri);
        if (parsed !== undefined) expect(rewriteUri(parsed.upstream, parsed.uri)).toBe(uri);
      }),
      { numRuns: 2_000 },
    );
  });
});
