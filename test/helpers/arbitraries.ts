// fast-check arbitraries the property tests (test/property/) share.
import fc from "fast-check";

/** Any UTF-16 code unit, lone surrogates included: what a JS string (and so a JSON string) may hold. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/** Strings of any UTF-16 code units, lone surrogates included. */
export function utf16String(constraints: { minLength?: number; maxLength?: number } = {}): fc.Arbitrary<string> {
  return fc.string({ ...constraints, unit: codeUnit });
}

/** Any string: ASCII-heavy, any code point, or any code units. */
export const anyString = fc.oneof(fc.string(), fc.string({ unit: "binary" }), utf16String());

/** `bytes` cut at arbitrary points into chunks (empty ones included), in order. */
export function chunked(bytes: Uint8Array): fc.Arbitrary<Uint8Array[]> {
  return fc.uniqueArray(fc.integer({ min: 0, max: bytes.length }), { maxLength: 24 }).map((cuts) => {
    const sorted = [...cuts].sort((a, b) => a - b);
    const parts: Uint8Array[] = [];
    let from = 0;
    for (const cut of sorted) {
      parts.push(bytes.subarray(from, cut));
      from = cut;
    }
    parts.push(bytes.subarray(from));
    return parts;
  });
}
