// Debian's podman as this machine needs it (docs/container.md, "Podman on this machine"):
//   --runtime runc   crun 1.8 (bookworm's default runtime) refuses the host's hybrid cgroup v1/v2 layout
//                    ("cgroups in hybrid mode not supported"), even with --cgroups=disabled; runc runs there.
//   --ulimit nofile, --ulimit nproc
//                    root here lacks CAP_SYS_RESOURCE, so the limits podman asks for by default (1048576 open
//                    files, and as many processes) cannot be set: give no more than the host's hard limit of
//                    open files, and no more than 32768 processes (the most podman itself keeps here).
// The storage driver (overlay on ext4) and the cgroup manager (cgroupfs, no systemd running) need no flag.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";

const MAX_PROCESSES = 32_768;

/** The hard limit of open files this process has, from /proc/self/limits. */
function hardOpenFiles(): number {
  const line = readFileSync("/proc/self/limits", "utf8")
    .split("\n")
    .find((l) => l.startsWith("Max open files"));
  const hard = line?.trim().split(/\s+/)[4];
  const n = Number(hard);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1_048_576) : 1_024;
}

/** The flags `podman build` and `podman run` take on this machine. */
export function runtimeFlags(): string[] {
  const files = hardOpenFiles();
  return [
    "--runtime",
    "runc",
    "--ulimit",
    `nofile=${files}:${files}`,
    "--ulimit",
    `nproc=${MAX_PROCESSES}:${MAX_PROCESSES}`,
  ];
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (bounded), resolving with its exit code and output whatever the code. */
export function run(
  file: string,
  args: readonly string[],
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      [...args],
      { cwd: opts.cwd, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024, encoding: "utf8" },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr: err && code === -1 ? `${stderr}\n${err.message}` : stderr });
      },
    );
  });
}

/** Like run, but rejects with the output when the program fails. */
export async function mustRun(
  file: string,
  args: readonly string[],
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<string> {
  const r = await run(file, args, opts);
  if (r.code !== 0) throw new Error(`${file} ${args.join(" ")} exited ${r.code}:\n${r.stderr.slice(-4_000)}`);
  return r.stdout;
}
