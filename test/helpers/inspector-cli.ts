// The official MCP Inspector CLI (@modelcontextprotocol/inspector-cli, an SDK 1.x client) run as a child process
// against a gateway URL over Streamable HTTP: one method per run, its JSON result parsed from stdout.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const BUILD = join(dirname(require.resolve("@modelcontextprotocol/inspector-cli/package.json")), "build");
/** Past this the run is killed (SIGKILL) and reported as failed: an inspector that hangs never holds a test. */
const RUN_TIMEOUT_MS = 30_000;

export interface InspectorRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** One Inspector CLI run: `url --transport http ...args`; its exit code and output, never a rejection. */
export function runInspector(url: string, args: string[]): Promise<InspectorRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(BUILD, "index.js"), url, "--transport", "http", ...args],
      // The CLI looks for its package.json (its client name and version) at ../package.json from the working
      // directory, not from its own file: run it from its build directory.
      { cwd: BUILD, timeout: RUN_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The result the Inspector CLI printed for `method`; throws with its output when it failed. */
export async function inspect(url: string, method: string, args: string[] = []): Promise<Record<string, unknown>> {
  const run = await runInspector(url, ["--method", method, ...args]);
  if (run.code !== 0)
    throw new Error(`inspector ${method} on ${url} exited ${run.code}:\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}
