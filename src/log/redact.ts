// Secrets out of free text: a stdio server's stderr lines, its command line, the gateway's log lines. One pass
// over the words of the text, each character looked at a bounded number of times, so the time is linear in the
// text and a line crafted to make a regular expression backtrack (1,000 characters of "-api-key" cost 37 ms in
// the former patterns) costs what any line of its length costs. A line is cut at REDACT_MAX_CHARS first.
//
// What is replaced by *** (the names compared without case):
//   - the value of a key that names a secret: key=value, key: value, key = value, "key":"value", --key=value;
//     a key names one when it contains password, passwd, passphrase, pwd, secret, token, api_key (apikey,
//     api-key), access_key, private_key, credential, auth (authorization…) or cookie;
//   - the argument after a flag that names one (--password VALUE, --api-key VALUE) and after -p and -k (or after
//     their "=": -p=VALUE);
//   - the credential after Bearer or Basic (Authorization: Bearer …), and after an auth scheme as a secret's value;
//   - a URL's userinfo, query and fragment (https://***@host/path?***#***);
//   - AWS access key ids (AKIA… or ASIA… and 16 more), JWTs (eyJ….….…), and provider tokens (sk-…, ghp_…,
//     github_pat_…, xoxb-…, glpat-…).
// A value in quotes is replaced up to its closing quote, spaces and all.

/** Longest text looked at; the rest is cut (after the last space in the last 256 characters, when there is one). */
export const REDACT_MAX_CHARS = 2_048;
const MASK = "***";
export const CUT_MARKER = `…[cut at ${REDACT_MAX_CHARS} characters]`;

/** Where a key names a secret. Tested once per key; its alternatives have no quantified prefix, so it is linear. */
const SECRET_KEY =
  /pass(?:wd|word|phrase)|pwd|secret|token|api[-_]?key|access[-_]?key|private[-_]?key|credential|auth|cookie/i;
/** Short flags whose argument is a secret (mysql -p, curl-like -k KEY); compared with case (-P is often a port). */
const SECRET_SHORT_FLAGS = new Set(["-p", "-k"]);
/** A word after which the next word is a credential. */
const AUTH_SCHEME = /^(?:bearer|basic)$/i;
/** A secret's value that is an auth scheme: kept, and the word after it is the secret. */
const VALUE_SCHEME = /^(?:bearer|basic|digest|negotiate|ntlm|token)$/i;

// Bounded patterns, each linear: a match can start only where its lookbehind allows, at most once per run of
// token characters, and what follows the start is a run of one class with a fixed tail.
const AWS_KEY_ID = /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g;
const JWT = /(?<![\w-])eyJ[\w-]{8,}\.[\w-]+\.[\w-]*/g;
const PROVIDER_TOKEN = /(?<![\w-])(?:sk|pk|rk|ghp|gho|ghs|ghu|github_pat|xox[abpr]|glpat)[-_][\w-]{10,}/g;

/** What the text scanned so far says about the next word. */
interface ScanState {
  /** "value": the next word is a secret's value; a quote character: inside a quoted secret value, until that quote. */
  pending: "none" | "value" | "separator" | '"' | "'";
}

// Character codes the scanner compares with.
const TAB = 9;
const NEWLINE = 10;
const RETURN = 13;
const SPACE = 32;
const QUOTE = 34;
const HASH = 35;
const AMP = 38;
const APOS = 39;
const PLUS = 43;
const COMMA = 44;
const DASH = 45;
const DOT = 46;
const SLASH = 47;
const COLON = 58;
const SEMI = 59;
const LT = 60;
const EQUALS = 61;
const GT = 62;
const QUESTION = 63;
const AT = 64;
const UNDERSCORE = 95;

function isSpace(c: number): boolean {
  return c === SPACE || c === TAB || c === NEWLINE || c === RETURN || c === 11 || c === 12;
}

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** A character of a URL scheme: letters, digits, + . - */
function isSchemeChar(c: number): boolean {
  return isAlnum(c) || c === PLUS || c === DOT || c === DASH;
}

/** A character of a key: letters, digits, _ . - and the quotes around it. */
function isKeyChar(c: number): boolean {
  return isAlnum(c) || c === UNDERSCORE || c === DOT || c === DASH || c === QUOTE || c === APOS;
}

function isQuote(c: number): boolean {
  return c === QUOTE || c === APOS;
}

/** Where an unquoted value ends: at a quote, a comma, a semicolon, an ampersand, or the end of the word. */
function valueEnd(word: string, from: number): number {
  let i = from;
  while (i < word.length) {
    const c = word.charCodeAt(i);
    if (isQuote(c) || c === COMMA || c === SEMI || c === AMP) break;
    i++;
  }
  return i;
}

/** Where a URL ends: at `limit` (a space, the word's end), a quote, < or >. */
function urlEnd(text: string, from: number, limit: number): number {
  let i = from;
  while (i < limit) {
    const c = text.charCodeAt(i);
    if (isQuote(c) || c === LT || c === GT) break;
    i++;
  }
  return i;
}

function unquoted(text: string): string {
  let a = 0;
  let b = text.length;
  while (a < b && isQuote(text.charCodeAt(a))) a++;
  while (b > a && isQuote(text.charCodeAt(b - 1))) b--;
  return text.slice(a, b);
}

/** A word that announces a secret in the next word: a secret flag, or Bearer/Basic. */
function announces(word: string): ScanState["pending"] {
  if (word.charCodeAt(0) === DASH) {
    if (SECRET_SHORT_FLAGS.has(word)) return "value";
    // A flag with a value of its own (--token=x, --token:x) announces nothing: its value was masked in the word.
    if (!word.includes("=") && !word.includes(":") && SECRET_KEY.test(word)) return "value";
    return "none";
  }
  const bare = unquoted(word);
  if (AUTH_SCHEME.test(bare)) return "value";
  // "password = x", "password : x": a bare secret key whose separator is the next word.
  if (bare.length > 0 && isBareKey(bare) && SECRET_KEY.test(bare)) return "separator";
  return "none";
}

function isBareKey(word: string): boolean {
  for (let i = 0; i < word.length; i++) if (!isKeyChar(word.charCodeAt(i))) return false;
  return true;
}

/** How a URL is shown: its secrets masked (stderr, command lines), or dropped (the logger's lines). */
type UrlStyle = "mask" | "drop";

/**
 * The URL whose "://" is at `sep` in `text`, its scheme starting at `schemeStart`, as shown; and where it ends (at
 * `limit` at the latest). Userinfo is what lies between "://" and the authority's last "@". Looks at each character
 * of the URL once.
 */
function showUrl(
  text: string,
  schemeStart: number,
  sep: number,
  limit: number,
  style: UrlStyle,
): { shown: string; end: number } {
  const end = urlEnd(text, sep + 3, limit);
  let authorityEnd = sep + 3;
  let at = -1;
  while (authorityEnd < end) {
    const c = text.charCodeAt(authorityEnd);
    if (c === SLASH || c === QUESTION || c === HASH) break;
    if (c === AT) at = authorityEnd;
    authorityEnd++;
  }
  let shown = text.slice(schemeStart, sep + 3);
  if (at < 0) shown += text.slice(sep + 3, authorityEnd);
  else shown += style === "mask" ? `${MASK}${text.slice(at, authorityEnd)}` : text.slice(at + 1, authorityEnd);
  let i = authorityEnd;
  while (i < end && text.charCodeAt(i) !== QUESTION && text.charCodeAt(i) !== HASH) i++;
  shown += text.slice(authorityEnd, i);
  if (i < end && style === "mask") {
    if (text.charCodeAt(i) === QUESTION) {
      shown += `?${MASK}`;
      while (i < end && text.charCodeAt(i) !== HASH) i++;
    }
    if (i < end) shown += `#${MASK}`;
  }
  return { shown, end };
}

/**
 * One word (no spaces) as shown, given what came before it; updates `state` for the next word. Each character is
 * looked at once by the scan, and once more at most by the test of the key or flag it belongs to.
 */
function redactWord(word: string, state: ScanState): string {
  const pending = state.pending;
  state.pending = "none";
  let announced: ScanState["pending"] | undefined;
  let out = "";
  let copied = 0;
  let i = 0;
  if (pending !== "none" && pending !== "separator") {
    // The word is (part of) a secret's value, and may hold secrets of its own too (Bearer password='x', a stray
    // quote that pairs with the wrong one) or announce the next word's (--password --token X, Bearer
    // Authorization:Basic X): how it reads on its own says, and wins (one more pass over the word).
    const own: ScanState = { pending: "none" };
    if (redactWord(word, own) !== word) {
      // What comes next must be what a second reading of the output (*** in the same state) finds, so that
      // redaction is idempotent: a quoted value stays open (*** holds no quote), a value is used up and the word's
      // own announcement follows.
      state.pending = pending === "value" ? own.pending : pending;
      return MASK;
    }
    announced = own.pending;
  }
  if (pending === '"' || pending === "'") {
    // Inside a quoted secret value: masked up to the closing quote.
    const close = word.indexOf(pending);
    if (close < 0) {
      state.pending = pending;
      return MASK;
    }
    out = MASK;
    copied = i = close;
  } else if (pending === "value") {
    // "password = x": a word of separators only is not the value; the value still comes.
    if (/^[:=]+$/.test(word)) {
      state.pending = "value";
      return word;
    }
    const masked = maskValue(word, 0, state);
    out = masked.text;
    copied = i = masked.end;
  }
  // Where the key and the URL scheme being read started.
  let keyStart = i;
  let schemeStart = i;
  let secretSeparatorFirst = pending === "separator";
  // Without ":" or "=" there is no key and no URL: most words are passed over at the speed of indexOf.
  if (word.indexOf(":", i) < 0 && word.indexOf("=", i) < 0) i = word.length;
  while (i < word.length) {
    const c = word.charCodeAt(i);
    if (c === COLON && word.startsWith("//", i + 1)) {
      let s = schemeStart;
      while (s < i && !isLetter(word.charCodeAt(s))) s++;
      if (s < i) {
        const url = showUrl(word, s, i, word.length, "mask");
        out += word.slice(copied, s) + url.shown;
        copied = i = keyStart = schemeStart = url.end;
        secretSeparatorFirst = false;
        continue;
      }
    }
    if (c === EQUALS || c === COLON) {
      const key = unquoted(word.slice(keyStart, i));
      const secret = (secretSeparatorFirst && i === 0) || SECRET_KEY.test(key) || SECRET_SHORT_FLAGS.has(key);
      secretSeparatorFirst = false;
      if (secret) {
        const masked = maskValue(word, i + 1, state);
        out += word.slice(copied, i + 1) + masked.text;
        copied = i = keyStart = schemeStart = masked.end;
        continue;
      }
      keyStart = schemeStart = i + 1;
      i++;
      continue;
    }
    if (!isKeyChar(c)) keyStart = i + 1;
    if (!isSchemeChar(c)) schemeStart = i + 1;
    i++;
  }
  out += word.slice(copied);
  if (state.pending === "none") state.pending = announced ?? announces(word);
  return out;
}

/**
 * The secret value starting at `from` (after its separator), masked; a quote opens a value that runs to its closing
 * quote, over words if need be; an auth scheme is kept and the next word is the secret. Empty: the next word is.
 */
function maskValue(word: string, from: number, state: ScanState): { text: string; end: number } {
  const first = word.charCodeAt(from);
  if (from < word.length && isQuote(first)) {
    const quote = word[from] as '"' | "'";
    const close = word.indexOf(quote, from + 1);
    if (close < 0) {
      // The value goes on in the next words, up to the closing quote (an auth scheme kept).
      state.pending = quote;
      const rest = word.slice(from + 1);
      if (rest === "" || VALUE_SCHEME.test(rest)) return { text: word.slice(from), end: word.length };
      return { text: `${quote}${MASK}`, end: word.length };
    }
    const inner = word.slice(from + 1, close);
    if (VALUE_SCHEME.test(inner)) return { text: word.slice(from, close), end: close };
    return { text: inner === "" ? quote : `${quote}${MASK}`, end: close };
  }
  const end = valueEnd(word, from);
  if (end === from) {
    if (from === word.length) state.pending = "value";
    return { text: "", end };
  }
  if (end === word.length && VALUE_SCHEME.test(word.slice(from, end))) {
    state.pending = "value";
    return { text: word.slice(from, end), end };
  }
  return { text: MASK, end };
}

/** The text cut at REDACT_MAX_CHARS, with the marker saying so. */
function clip(text: string): string {
  if (text.length <= REDACT_MAX_CHARS) return text;
  let cut = REDACT_MAX_CHARS;
  for (let i = REDACT_MAX_CHARS; i > REDACT_MAX_CHARS - 256; i--) {
    if (isSpace(text.charCodeAt(i))) {
      cut = i;
      break;
    }
  }
  return `${text.slice(0, cut)}${CUT_MARKER}`;
}

/** The text's words, each redacted as `state` and the words before it say. */
function scan(text: string, state: ScanState): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const start = i;
    while (i < text.length && isSpace(text.charCodeAt(i))) i++;
    out += text.slice(start, i);
    const wordStart = i;
    while (i < text.length && !isSpace(text.charCodeAt(i))) i++;
    if (i > wordStart) out += redactWord(text.slice(wordStart, i), state);
  }
  return out.replace(AWS_KEY_ID, MASK).replace(JWT, MASK).replace(PROVIDER_TOKEN, MASK);
}

/** A line (a stdio server's stderr line, a line it wrote to stdout that is not a message) made safe to show. */
export function redactLine(line: string): string {
  return scan(clip(line), { pending: "none" });
}

/**
 * The arguments of a command line, each made safe to show: an argument is read as a line, and what one argument
 * announces (--api-key, -p, Authorization:) masks the next.
 */
export function redactArgs(argv: readonly string[]): string[] {
  const state: ScanState = { pending: "none" };
  return argv.map((arg) => {
    // After a secret flag, the next argument is the value, spaces and all (an auth scheme is kept, and the argument
    // after it is the value); what that argument announces itself still counts.
    if (state.pending !== "value") return scan(clip(arg), state);
    if (VALUE_SCHEME.test(unquoted(arg))) return arg;
    state.pending = announces(arg);
    return arg === "" ? arg : MASK;
  });
}

/**
 * The URLs in a text without their userinfo, query and fragment (the logger's rule: scheme, host and path are kept);
 * the rest as it is. One pass, however many URLs or "://" the text holds.
 */
export function dropUrlSecrets(text: string): string {
  if (!text.includes("://")) return text;
  let out = "";
  let copied = 0;
  let schemeStart = 0;
  let wordEnd = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) {
      schemeStart = i + 1;
      i++;
      continue;
    }
    if (c === COLON && text.startsWith("//", i + 1)) {
      let s = schemeStart;
      while (s < i && !isLetter(text.charCodeAt(s))) s++;
      if (s < i) {
        // The URL ends with its word at the latest; the end of the word is found once.
        if (wordEnd <= i) {
          wordEnd = i;
          while (wordEnd < text.length && !isSpace(text.charCodeAt(wordEnd))) wordEnd++;
        }
        const url = showUrl(text, s, i, wordEnd, "drop");
        out += text.slice(copied, s) + url.shown;
        copied = i = schemeStart = url.end;
        continue;
      }
    }
    if (!isSchemeChar(c)) schemeStart = i + 1;
    i++;
  }
  return out + text.slice(copied);
}
