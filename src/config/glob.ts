// The one glob dialect of the config: `*` any run of characters, `?` one
// character, everything else literal, and the whole name must match.
//
// Matched by the classic greedy wildcard walk (one backtrack point, the last
// `*`), not a RegExp: a RegExp of several `.*` backtracks polynomially (O(n^k)
// for k stars), and the names matched are the caller's (tools/call
// params.name, token claims). This walk is O(name × glob) at worst.

/** A compiled glob: `test` says whether a whole name matches. */
export interface GlobMatcher {
  test(text: string): boolean;
}

function matches(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    const p = glob[g];
    if (p === "*") {
      star = g++;
      mark = t;
    } else if (p !== undefined && (p === "?" || p === text[t])) {
      g += 1;
      t += 1;
    } else if (star !== -1) {
      // The last `*` takes one more character, and the rest of the glob tries again from there.
      g = star + 1;
      t = ++mark;
    } else return false;
  }
  while (glob[g] === "*") g += 1;
  return g === glob.length;
}

export function globToRegExp(glob: string): GlobMatcher {
  return { test: (text: string) => matches(glob, text) };
}
