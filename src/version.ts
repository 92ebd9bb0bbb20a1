// The gateway's own identity, as it introduces itself to upstreams (initialize
// clientInfo when the modern caller sent none) and on --version.
import { readFileSync } from "node:fs";
import type { Implementation } from "./protocol/modern-request.js";

let cached: Implementation | undefined;

export function packageInfo(): Implementation {
  cached ??= (() => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      name: string;
      version: string;
    };
    return { name: pkg.name, version: pkg.version };
  })();
  return cached;
}
