// What a subcommand of the CLI is (`mcp-task-gateway init`, …): src/cli.ts keeps the table of them and runs the one
// named by the first argument, before any option is parsed, so each takes its own arguments and options.

/** The process's streams and environment, as the CLI passes them (tests capture them). */
export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export interface Subcommand {
  /** Its arguments as --help shows them after the name, e.g. "[PATH]". */
  readonly usage: string;
  /** One line for --help. */
  readonly summary: string;
  /** Runs with the arguments after its name; the exit code (its messages already written). */
  run(args: readonly string[], io: CommandIo): Promise<number>;
}

export const EXIT_OK = 0;
/** A problem the operator can fix: a bad argument or configuration, a file in the way. */
export const EXIT_USAGE = 2;
