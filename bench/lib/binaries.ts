import { existsSync } from "node:fs";
import { join } from "node:path";

export const APT_HINT = "install with: apt-get update && apt-get install -y wrk nginx";

/** Full path of a program, also looking in the sbin directories a non-root PATH may lack. */
export function findBinary(name: string): string | undefined {
  const dirs = (process.env["PATH"] ?? "").split(":").concat(["/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin"]);
  return dirs
    .filter((dir) => dir !== "")
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
}
