// The gateway's upstream client in front of a stdio server: the same client as for an HTTP upstream, whose
// requests an in-process dispatcher hands to the stdio host (dispatcher.ts), named by its (redacted) command,
// and ready when the command can be started (/readyz spawns nothing).
import type { UpstreamConfig } from "../config/schema.js";
import { UpstreamClient, type ProbeResult } from "../upstream/client.js";
import { StdioDispatcher } from "./dispatcher.js";
import type { StdioHost } from "./host.js";

export class StdioUpstreamClient extends UpstreamClient {
  override readonly displayUrl: string;

  constructor(
    config: UpstreamConfig,
    private readonly host: StdioHost,
    name?: string,
  ) {
    super(
      { ...config, url: host.url },
      name,
      undefined,
      new StdioDispatcher(host, { headersTimeoutMs: config.headersTimeoutMs, idleTimeoutMs: config.idleTimeoutMs }),
    );
    this.displayUrl = host.label;
  }

  override probe(): Promise<ProbeResult> {
    return this.host.probe();
  }
}
