// The V8 heap cap the deploy files set (docs/deployment.md, "Memory: the V8 heap cap"): the Containerfile's ENV, the
// systemd unit's Environment and the Kubernetes Deployment's env each give NODE_OPTIONS a flag node accepts, and a
// node started with it has that old-space limit. A typo would otherwise go unnoticed (node refuses to start on an
// unknown NODE_OPTIONS flag, but a wrong value only leaves V8's default, with its 4× heap growth, in place).
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

const MiB = 1024 * 1024;
const file = (path: string): Promise<string> =>
  readFile(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8");

/** NODE_OPTIONS of each deploy file, as that file sets it. */
const SOURCES: Record<string, () => Promise<string | undefined>> = {
  Containerfile: async () => /^\s*(?:ENV\s+)?NODE_OPTIONS=(\S+)/m.exec(await file("Containerfile"))?.[1],
  "systemd unit": async () =>
    /^Environment=NODE_OPTIONS=(.+)$/m.exec(await file("deploy/systemd/mcp-task-gateway.service"))?.[1],
  "Kubernetes Deployment": async () => {
    for (const doc of parseAllDocuments(await file("deploy/kubernetes/deployment.yaml"))) {
      const spec = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Container[] } } } };
      const env = spec.spec?.template?.spec?.containers?.find((c) => c.name === "gateway")?.env ?? [];
      const found = env.find((e) => e.name === "NODE_OPTIONS");
      if (spec.kind === "Deployment" && found) return found.value;
    }
    return undefined;
  },
};

interface Container {
  name: string;
  env?: { name: string; value?: string }[];
}

/** V8's heap limit (old space plus the young generation) in a node started with these NODE_OPTIONS. */
function heapLimit(nodeOptions: string): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["-e", "process.stdout.write(String(require('v8').getHeapStatistics().heap_size_limit))"],
      { env: { ...process.env, NODE_OPTIONS: nodeOptions }, encoding: "utf8", timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(Number(stdout))),
    );
  });
}

describe("the V8 heap cap of the deploy files", () => {
  it.each(Object.keys(SOURCES))("%s: node accepts its NODE_OPTIONS and caps the old space there", async (name) => {
    const options = await SOURCES[name]?.();
    expect(options).toMatch(/^--max-old-space-size=\d+$/);
    const capMiB = Number(options?.split("=")[1]);
    const limit = await heapLimit(options ?? "");
    // heap_size_limit is the old space's cap plus the young generation's reservation (three semi-spaces).
    expect(limit).toBeGreaterThanOrEqual(capMiB * MiB);
    expect(limit).toBeLessThanOrEqual((capMiB + 64) * MiB);
  });
});
