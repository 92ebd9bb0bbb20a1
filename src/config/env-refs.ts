// ${VAR} in the secret-bearing values of a config file, expanded from the environment when the file is loaded:
// static header values (upstream.headers.*, upstreams.NAME.headers.*), an upstream's OAuth client settings
// (upstreams.NAME.oauth.*: clientId, clientSecret, …) and the grant vault's keys (auth.vault.keys). Those are an
// upstream's own credentials (authorization: Bearer ${GITHUB_TOKEN}), which belong in the environment or a secret
// store, not in a file that is committed, mounted from a config map or pasted into a review. Only those values
// are expanded: elsewhere `${` is ordinary text, and flags and environment variables are taken as given (a shell
// has had its turn at them).
// An unset variable is an error, not an empty string, so a missing secret stops the start (or the reload, which
// keeps the old config) instead of sending "Bearer " upstream. Messages name the field and the variable, never
// the value, nor the rest of the header's text, which may hold a credential written out.
import { ConfigError } from "./validate.js";

type Settings = Record<string, unknown>;

/** `$${` (a literal `${`), `${NAME}`, or a `${` that is neither: a mistake, never left as text. */
const REF = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{/g;

function isRecord(v: unknown): v is Settings {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** One header value with its references replaced; each problem goes to `problems`, naming `field`. */
function expand(text: string, field: string, env: NodeJS.ProcessEnv, problems: string[]): string {
  return text.replace(REF, (ref: string, name: string | undefined, at: number) => {
    if (ref === "$${") return "${";
    if (name === undefined) {
      problems.push(
        `${field}: has a \${ at character ${at + 1} that is not \${NAME} (letters, digits and _, not starting with a digit); write $\${ for a literal \${`,
      );
      return ref;
    }
    const value = env[name];
    if (value === undefined) {
      problems.push(`${field}: names \${${name}}, which is not set`);
      return ref;
    }
    return value;
  });
}

/** A headers block with its string values expanded; anything else is left for the schema to judge. */
function expandHeaders(headers: unknown, field: string, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (!isRecord(headers)) return headers;
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [
      name,
      typeof value === "string" ? expand(value, `${field}.${name}`, env, problems) : value,
    ]),
  );
}

/** An upstream block with its headers and its oauth settings expanded, where it has them. */
function expandBlock(block: unknown, field: string, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (!isRecord(block)) return block;
  const out: Settings = { ...block };
  if (Object.hasOwn(block, "headers")) out.headers = expandHeaders(block.headers, `${field}.headers`, env, problems);
  // The oauth block's string values (a flat object): the same rule as headers.
  if (Object.hasOwn(block, "oauth")) out.oauth = expandHeaders(block.oauth, `${field}.oauth`, env, problems);
  return out;
}

/** auth.vault.keys, each expanded. */
function expandAuth(auth: unknown, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (!isRecord(auth) || !isRecord(auth.vault) || !Array.isArray(auth.vault.keys)) return auth;
  const keys = auth.vault.keys.map((k: unknown, i) =>
    typeof k === "string" ? expand(k, `auth.vault.keys.${i}`, env, problems) : k,
  );
  return { ...auth, vault: { ...auth.vault, keys } };
}

/**
 * The config file's settings with ${VAR} expanded in every value named above, from `env`; the input is not
 * changed. Throws one ConfigError listing every unset variable and malformed `${`.
 */
export function expandHeaderRefs(file: Settings, env: NodeJS.ProcessEnv): Settings {
  const problems: string[] = [];
  const out: Settings = { ...file };
  if (Object.hasOwn(file, "upstream")) out.upstream = expandBlock(file.upstream, "upstream", env, problems);
  if (isRecord(file.upstreams)) {
    out.upstreams = Object.fromEntries(
      Object.entries(file.upstreams).map(([name, block]) => [
        name,
        expandBlock(block, `upstreams.${name}`, env, problems),
      ]),
    );
  }
  if (Object.hasOwn(file, "auth")) out.auth = expandAuth(file.auth, env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return out;
}
