// Deprecated config names. Parsing a config happens where no logger exists yet (the CLI validates before it
// knows the log level), so a use of an old name is noted here, and the gateway, once it has its logger, warns
// about each note. A note is taken once per process: a reload that still uses the old name does not repeat it.
const noted = new Set<string>();
const pending: string[] = [];

export function noteDeprecated(message: string): void {
  if (noted.has(message)) return;
  noted.add(message);
  pending.push(message);
}

/** The notes not warned about yet; each is handed out once. */
export function takeDeprecations(): string[] {
  return pending.splice(0);
}
