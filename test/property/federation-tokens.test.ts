// Properties of a federated endpoint's opaque tokens: list cursors (federation/cursor.ts), cursors of cursors
// (pages.ts) and task handles (task-handles.ts). Each encodes and decodes back to what it was made of; anything
// else, a tampered token included, decodes to undefined or to something well formed (a handle, sealed, to nothing
// but what it was made of), and decoding never throws. Rewritten resource URIs are in federation-uris.test.ts.
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, MAX_CURSOR_CHARS, type FederatedCursor } from "../../src/federation/cursor.js";
import { decodePages, encodePages } from "../../src/federation/pages.js";
import { TaskHandles } from "../../src/federation/task-handles.js";
import { anyString, utf16String } from "../helpers/arbitraries.js";

const upstreamName = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,31}$/);
const position: fc.Arbitrary<FederatedCursor> = fc.record(
  { upstream: upstreamName, cursor: fc.oneof(anyString, utf16String({ maxLength: 64 })) },
  { requiredKeys: ["upstream"] },
);

/** A token with one change: a character replaced, inserted or removed, or the token cut or extended. */
function tampered(token: string): fc.Arbitrary<string> {
  const at = fc.nat({ max: Math.max(0, token.length - 1) });
  const char = fc.oneof(fc.constantFrom("A", "_", "-", "=", "~", ".", "%", "/", "+"), fc.string({ maxLength: 1 }));
  return fc
    .oneof(
      fc.tuple(at, char).map(([i, c]) => token.slice(0, i) + c + token.slice(i + 1)),
      fc.tuple(at, char).map(([i, c]) => token.slice(0, i) + c + token.slice(i)),
      at.map((i) => token.slice(0, i) + token.slice(i + 1)),
      at.map((i) => token.slice(0, i)),
      anyString.map((s) => token + s),
    )
    .filter((t) => t !== token);
}

describe("federated cursors (properties)", () => {
  it("a cursor decodes to the position it was made of", () => {
    fc.assert(
      fc.property(position, (p) => {
        expect(decodeCursor(encodeCursor(p))).toEqual(p);
      }),
      { numRuns: 1_000 },
    );
  });

  it("a cursor that is too long to decode is refused when it is made", () => {
    fc.assert(
      fc.property(upstreamName, fc.integer({ min: 2_900, max: 3_300 }), (upstream, n) => {
        const p = { upstream, cursor: "x".repeat(n) };
        let text: string;
        try {
          text = encodeCursor(p);
        } catch (err) {
          expect(err).toBeInstanceOf(RangeError);
          return;
        }
        expect(text.length).toBeLessThanOrEqual(MAX_CURSOR_CHARS);
        expect(decodeCursor(text)).toEqual(p);
      }),
    );
  });

  it("a tampered cursor decodes to undefined or to a well-formed position, never a throw", () => {
    // Cursors are opaque, not sealed: a client may name any member and cursor, so a change may read as another
    // position. What decodes is always one encodeCursor could have made.
    const made = position.chain((p) => tampered(encodeCursor(p)));
    fc.assert(
      fc.property(made, (text) => {
        const decoded = decodeCursor(text);
        if (decoded !== undefined) expect(decodeCursor(encodeCursor(decoded))).toEqual(decoded);
      }),
      { numRuns: 2_000 },
    );
  });

  it("anything decodes without throwing", () => {
    fc.assert(
      fc.property(anyString, (text) => {
        const cursor = decodeCursor(text);
        if (cursor !== undefined) expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
        const pages = decodePages(text);
        if (pages !== undefined) expect(pages.length).toBeGreaterThan(0);
      }),
      { numRuns: 2_000 },
    );
  });

  it("a cursor of cursors decodes to the positions it was made of", () => {
    fc.assert(
      fc.property(fc.array(position, { minLength: 1, maxLength: 8 }), (positions) => {
        expect(decodePages(encodePages(positions))).toEqual(positions);
      }),
      { numRuns: 1_000 },
    );
  });

  it("a cursor of cursors decodes back however long its members' cursors are (each as long as a cursor may be)", () => {
    const long = fc
      .tuple(upstreamName, fc.integer({ min: 1_000, max: 2_900 }))
      .map(([upstream, n]) => ({ upstream, cursor: "c".repeat(n) }));
    fc.assert(
      fc.property(fc.array(long, { minLength: 1, maxLength: 8 }), (positions) => {
        expect(decodePages(encodePages(positions))).toEqual(positions);
      }),
      { numRuns: 100 },
    );
  });

  it("a tampered cursor of cursors decodes to undefined or to positions that are each a cursor", () => {
    const made = fc
      .array(position, { minLength: 1, maxLength: 4 })
      .chain((ps) => fc.tuple(fc.constant(ps), tampered(encodePages(ps))));
    fc.assert(
      fc.property(made, ([, text]) => {
        const decoded = decodePages(text);
        if (decoded === undefined) return;
        for (const p of decoded) expect(decodeCursor(encodeCursor(p))).toEqual(p);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("federated task handles (properties)", () => {
  const handles = new TaskHandles(randomBytes(32));
  const handle = fc.record({
    upstream: upstreamName,
    upstreamId: fc.oneof(anyString, utf16String({ maxLength: 32 })),
    owner: fc.oneof(anyString, fc.stringMatching(/^[0-9a-f]{64}$/)),
  });

  it("a handle opens to what it was made of", () => {
    fc.assert(
      fc.property(handle, (h) => {
        const id = handles.issue(h);
        expect(TaskHandles.isHandle(id)).toBe(true);
        expect(handles.open(id)).toEqual(h);
      }),
      { numRuns: 1_000 },
    );
  });

  it("a tampered handle opens to nothing, or to exactly what the handle was made of", () => {
    const made = handle.chain((h) => fc.tuple(fc.constant(h), tampered(handles.issue(h))));
    fc.assert(
      fc.property(made, ([h, id]) => {
        const opened = handles.open(id);
        if (opened !== undefined) expect(opened).toEqual(h);
      }),
      { numRuns: 2_000 },
    );
  });

  it("anything opens without throwing", () => {
    const candidate = fc.oneof(
      anyString,
      fc.tuple(fc.oneof(upstreamName, anyString), anyString).map(([u, rest]) => `${u}.~${rest}`),
    );
    fc.assert(
      fc.property(candidate, (id) => {
        expect(handles.open(id)).toBeUndefined();
      }),
      { numRuns: 2_000 },
    );
  });
});
