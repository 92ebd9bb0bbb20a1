// The effective configuration with its secrets masked, for --print-config: what an operator may paste into an issue
// or a chat. Every field that holds a credential is listed here by its path (SECRET_FIELDS); every other string is
// shown as it is, except a URL's password and query string, wherever a URL appears. test/unit/print-config.test.ts
// fails when the schema gains a field whose name looks secret and this list does not say how to show it.
import { redactArgs } from "../log/redact.js";

export const MASK = "***";

type Masker = (value: unknown) => unknown;

const hide: Masker = () => MASK;

/** Each value of a map (header values, environment variables) hidden; the names stay, they are what one checks. */
const hideValues: Masker = (value) =>
  typeof value === "object" && value !== null
    ? Object.fromEntries(Object.keys(value).map((name) => [name, MASK]))
    : MASK;

/** Each item of a list of secrets (the vault's keys): how many there are is worth seeing, their values never. */
const hideEach: Masker = (value) => (Array.isArray(value) ? value.map(() => MASK) : MASK);

/** A private key given as PEM text is hidden; a file path to one is shown (the path is not the key). */
const hidePem: Masker = (value) => (typeof value === "string" && /-----BEGIN|\n/.test(value) ? MASK : value);

/** A stdio command line: the values of secret-looking flags, URL credentials and tokens, as its log label shows it. */
const hideArgs: Masker = (value) =>
  Array.isArray(value) && value.every((a) => typeof a === "string") ? redactArgs(value) : MASK;

/** A scheme://userinfo@hosts/path?query#fragment, hosts possibly a comma-separated list (redis-sentinel://). */
const URL_PARTS = /^([a-z][a-z0-9+.-]*:\/\/)(?:([^/?#@]*)@)?([^?#]*)(\?[^#]*)?(#.*)?$/i;

/**
 * A URL with its password (or a user-only credential, https://TOKEN@host) and its query string replaced by ***;
 * the scheme, user name, hosts, path and fragment (a Sentinel master's name) are shown. Any other text is unchanged.
 */
export function maskUrl(text: string): string {
  const m = URL_PARTS.exec(text);
  if (!m) return text;
  const [, scheme = "", userinfo, rest = "", query, fragment = ""] = m;
  const colon = userinfo?.indexOf(":") ?? -1;
  const user = userinfo === undefined ? "" : colon >= 0 ? `${userinfo.slice(0, colon)}:${MASK}@` : `${MASK}@`;
  return `${scheme}${user}${rest}${query === undefined ? "" : `?${MASK}`}${fragment}`;
}

const UPSTREAM_BLOCKS = ["upstream", "upstreams.*"] as const;

/**
 * Every field that holds a secret, by path ("*" is any name), and how it is shown. A header value may hold a ${VAR}
 * the file named, so every header value is hidden, whatever it came from. An oauth block's client id may come
 * from a ${VAR} too, but it is not a secret (it is sent in clear to the authorization server and shown in its UI).
 */
export const SECRET_FIELDS: readonly (readonly [path: string, mask: Masker])[] = [
  ...UPSTREAM_BLOCKS.flatMap((u) => [
    [`${u}.headers`, hideValues] as const,
    [`${u}.env`, hideValues] as const,
    [`${u}.command`, hideArgs] as const,
    [`${u}.oauth.clientSecret`, hide] as const,
  ]),
  ["auth.vault.keys", hideEach],
  ["metrics.token", hide],
  ["eraBridge.requestStateSecret", hide],
  ["tasks.redisTls.key", hidePem],
  ["server.internalTls.key", hidePem],
];

function matches(pattern: readonly string[], path: readonly string[]): boolean {
  return pattern.length === path.length && pattern.every((p, i) => p === "*" || p === path[i]);
}

const PATTERNS = SECRET_FIELDS.map(([path, mask]) => [path.split("."), mask] as const);

function maskAt(value: unknown, path: readonly string[]): unknown {
  const rule = PATTERNS.find(([pattern]) => matches(pattern, path));
  if (rule) return value === undefined ? value : rule[1](value);
  if (typeof value === "string") return maskUrl(value);
  if (Array.isArray(value)) return value.map((v, i) => maskAt(v, [...path, String(i)]));
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskAt(v, [...path, k])]));
  return value;
}

/** A copy of `config` with every secret masked; the input is not changed. */
export function maskSecrets(config: object): Record<string, unknown> {
  return maskAt(config, []) as Record<string, unknown>;
}
