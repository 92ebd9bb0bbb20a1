// server.internalTls: the PEM files replicas use to speak HTTPS to each other's internal listener, verifying each
// other (issue 23): read once at start; a file that cannot be read stops the start, naming the setting.
import { readFileSync } from "node:fs";
import type { GatewayConfig } from "../config/schema.js";
import { ConfigError } from "../config/validate.js";

export interface InternalTls {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

function read(setting: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError([
      `server.internalTls.${setting} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    ]);
  }
}

export function readInternalTls(config: GatewayConfig): InternalTls | undefined {
  const files = config.server.internalTls;
  if (!files) return undefined;
  return { cert: read("cert", files.cert), key: read("key", files.key), ca: read("ca", files.ca) };
}
