// Vitest's global setup: before any test file runs, the services the tests need (a Redis on
// 127.0.0.1:6379, redis-server, Debian's chromium, systemd-analyze) are checked once by the same script that
// `npm test` runs first, so `npx vitest` on a machine without them fails with one message
// naming what is missing and how to set it up, not with a connection error in every file.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../../scripts/test-services.sh", import.meta.url));

export default function checkServices(): void {
  const run = spawnSync("bash", [script, "check"], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(run.stderr.trim() || `${script} check failed (${run.status ?? run.signal})`);
}
