// fast-check arbitraries the property tests (test/property/) share.
import fc from "fast-check";

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
