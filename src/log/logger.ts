// The gateway's logger: pino, writing one JSON object per line to stderr, behind
// the small `Logger` interface every layer uses (a message and a flat object of
// fields). Secrets never reach the output:
//   - callers pass only fields they chose, and URLs go through redactUrl();
//   - pino's redact paths replace the values of known secret keys (Authorization,
//     cookies, tokens, API keys, passwords), at the top level and one level down;
//   - every string field, and the message, is scrubbed as it is written: URL
//     userinfo and query strings (where tokens hide) and the credentials of
//     "Bearer …"/"Basic …" are cut, whatever key they came under.
// Lines carry `time` (ISO 8601), `level` (its name, e.g. "info"), `msg`, the
// fields, and trace_id/span_id when a span is active (tracing on). A logger may
// carry fields of its own on every line (`base`: with --workers, the `worker`).
import { pino, type DestinationStream, type LoggerOptions } from "pino";
import { context, isSpanContextValid, trace } from "@opentelemetry/api";
import type { LogLevel } from "../config/schema.js";
import { dropUrlSecrets } from "./redact.js";

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  readonly level: LogLevel;
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
}

export const REDACTED = "[Redacted]";

/** Field names whose values are secrets, compared without case. */
const SECRET_KEYS = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "token",
  "access_token",
  "refresh_token",
  "id_token",
  "client_secret",
  "secret",
  "password",
  "passwd",
  "api_key",
  "apikey",
  "x-api-key",
  "credentials",
  "requeststatesecret",
];
const SECRET_KEY_SET = new Set(SECRET_KEYS);

/** pino redact paths for the secret keys and their usual spellings, top level and one level down (headers.cookie). */
function redactPaths(): string[] {
  const spellings = new Set<string>();
  for (const key of SECRET_KEYS) {
    spellings.add(key);
    spellings.add(key.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()));
  }
  spellings.add("apiKey");
  spellings.add("accessToken");
  spellings.add("refreshToken");
  spellings.add("clientSecret");
  const paths: string[] = [];
  for (const key of spellings) {
    const seg = /^[A-Za-z_$][\w$]*$/.test(key) ? key : `["${key}"]`;
    paths.push(seg, seg.startsWith("[") ? `*${seg}` : `*.${seg}`);
  }
  return paths;
}

const AUTH_SCHEME = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi;

/** A text as it may be logged: URLs lose userinfo, query and fragment; credentials after an auth scheme are cut. */
function scrubText(text: string): string {
  // One pass (redact.ts): a pattern for URLs backtracked on text like "a.a.a.…://" (10 ms for 4 KB).
  let out = dropUrlSecrets(text);
  if (/bearer|basic/i.test(out)) out = out.replace(AUTH_SCHEME, `$1 ${REDACTED}`);
  return out;
}

/** The fields as written: time, level and msg are the logger's own; secret keys and secrets in text are cut. */
function scrubFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in fields) {
    if (!Object.hasOwn(fields, key) || key === "time" || key === "level" || key === "msg") continue;
    const value = fields[key];
    if (SECRET_KEY_SET.has(key.toLowerCase())) out[key] = REDACTED;
    else out[key] = typeof value === "string" ? scrubText(value) : value;
  }
  return out;
}

const NO_TRACE: Record<string, string> = Object.freeze({});

/** trace_id and span_id of the active span; nothing without one (always so with tracing off: the API's context is the root). */
function traceFields(): Record<string, string> {
  const span = trace.getSpan(context.active());
  if (span === undefined) return NO_TRACE;
  const sc = span.spanContext();
  return isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : NO_TRACE;
}

const EMPTY: LogFields = Object.freeze({});

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
  now: () => Date = () => new Date(),
  base?: LogFields,
): Logger {
  const options: LoggerOptions = {
    level,
    // No pid or hostname: a line says what happened; where is the collector's business. `base`: fields of the
    // process that every line carries (the worker of --workers), which no line's own fields replace.
    base: base ?? null,
    timestamp: () => `,"time":"${now().toISOString()}"`,
    formatters: {
      level: (label) => ({ level: label }),
      log: scrubFields,
    },
    redact: { paths: redactPaths(), censor: REDACTED },
    mixin: traceFields,
    // The span's ids win over a field of the same name.
    mixinMergeStrategy: (fields, traced) => (traced === NO_TRACE ? fields : { ...fields, ...traced }),
  };
  const destination: DestinationStream = { write };
  const p = pino(options, destination);
  const emit = (at: "error" | "warn" | "info" | "debug") => {
    const method = p[at].bind(p);
    return (msg: string, fields?: LogFields): void => {
      if (!p.isLevelEnabled(at)) return;
      method(fields ?? EMPTY, scrubText(msg));
    };
  };
  return { level, error: emit("error"), warn: emit("warn"), info: emit("info"), debug: emit("debug") };
}

/** Origin and path only: drops user:password@ and ?query, which may carry credentials. */
export function redactUrl(url: string | URL): string {
  try {
    const u = typeof url === "string" ? new URL(url) : url;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid url)";
  }
}

/** A logger that adds `fields` to every line (e.g. the upstream a line is about); the caller's fields win. */
export function withFields(log: Logger, fields: LogFields): Logger {
  return {
    level: log.level,
    error: (msg, more) => log.error(msg, { ...fields, ...more }),
    warn: (msg, more) => log.warn(msg, { ...fields, ...more }),
    info: (msg, more) => log.info(msg, { ...fields, ...more }),
    debug: (msg, more) => log.debug(msg, { ...fields, ...more }),
  };
}
