// A tiny leveled logger writing one JSON object per line to stderr.
// Secrets never reach it: callers pass only fields they chose, and URLs go
// through redactUrl() so userinfo and query strings (where tokens hide) vanish.
import type { LogLevel } from "../config/schema.js";

const RANK: Record<LogLevel, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4 };

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  readonly level: LogLevel;
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
}

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
  now: () => Date = () => new Date(),
): Logger {
  const emit = (at: Exclude<LogLevel, "silent">) => (msg: string, fields?: LogFields) => {
    if (RANK[at] > RANK[level]) return;
    write(`${JSON.stringify({ ...fields, time: now().toISOString(), level: at, msg })}\n`);
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
