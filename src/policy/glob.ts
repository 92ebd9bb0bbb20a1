// The one glob dialect of the config: `*` any run of characters, `?` one
// character, everything else literal, and the whole name must match.
export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${body}$`, "s");
}
