// The CLI run in process (src/cli.ts runCli), its output captured: what a test of a subcommand or a flag reads.
import { runCli, type CliIo } from "../../src/cli.js";

export interface CliRun {
  code: number | null;
  out: string;
  err: string;
}

export async function runCliCaptured(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  let out = "";
  let err = "";
  const io: CliIo = { env, stdout: (t) => (out += t), stderr: (t) => (err += t) };
  const result = await runCli(argv, io);
  return { code: result.exitCode, out, err };
}
