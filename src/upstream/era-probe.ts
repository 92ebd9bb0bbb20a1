// Which era the upstream speaks. Configured, or (auto) learned once by sending
// it server/discover with a modern envelope: a modern server answers with its
// supported versions; a legacy one answers an error (it wants initialize first).
import { isRecord } from "../protocol/json.js";
import { META, MODERN_VERSION, type Implementation } from "../protocol/modern-request.js";
import type { UpstreamClient } from "./client.js";
import { postRpc } from "./rpc.js";
import { TASKS_EXTENSION } from "../protocol/tasks-extension.js";
import { responseTo } from "./rpc.js";
import { raceSignal } from "./race-signal.js";

export type UpstreamEraName = "legacy" | "modern";

export class UpstreamEra {
  private verdict: Promise<UpstreamEraName> | undefined;
  /**
   * Whether the (modern) upstream serves the Tasks extension itself, from its
   * discover answer. If it does, its tasks pass through untouched; if not, the
   * gateway owns tasks in front of it.
   */
  upstreamServesTasks = false;
  /** Whether upstreamServesTasks is known: a probe answered (or the upstream is configured legacy, with no tasks of its own). */
  get tasksKnown(): boolean {
    return this.configured === "legacy" || this.probed;
  }
  private probed = false;
  /** The era the last probe found (the status page, the metrics); undefined before one answered. */
  private learned: UpstreamEraName | undefined;

  /** What is known without asking: the configured era, or the one the probe found. */
  get known(): UpstreamEraName | undefined {
    return this.configured === "auto" ? this.learned : this.configured;
  }

  /** Where `known` comes from: the config (upstream.era), or a probe's answer; undefined while it is unknown. */
  get knownFrom(): "config" | "probe" | undefined {
    if (this.configured !== "auto") return "config";
    return this.learned === undefined ? undefined : "probe";
  }

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly configured: "auto" | UpstreamEraName,
    private readonly gatewayInfo: Implementation,
    private readonly probeTimeoutMs = 10_000,
  ) {}

  get(credentialHeaders: string[], signal: AbortSignal): Promise<UpstreamEraName> {
    if (this.configured === "legacy") return Promise.resolve("legacy");
    // One probe is shared by every waiting request, so it runs under its own deadline, not the first caller's
    // signal; each caller only stops waiting when its own client leaves. A failed probe is not remembered.
    this.verdict ??= this.probe(credentialHeaders, AbortSignal.timeout(this.probeTimeoutMs)).catch((err: unknown) => {
      this.verdict = undefined;
      throw err;
    });
    // A configured modern upstream is still asked server/discover once, to learn whether it serves tasks.
    const verdict =
      this.configured === "modern"
        ? this.verdict.then(
            () => "modern" as const,
            () => "modern" as const,
          )
        : this.verdict;
    return raceSignal(verdict, signal);
  }

  private async probe(credentialHeaders: string[], signal: AbortSignal): Promise<UpstreamEraName> {
    const id = "gw-era-probe";
    const answer = await postRpc(
      this.upstream,
      [...credentialHeaders, "mcp-protocol-version", MODERN_VERSION, "mcp-method", "server/discover"],
      {
        jsonrpc: "2.0",
        id,
        method: "server/discover",
        params: {
          _meta: {
            [META.protocolVersion]: MODERN_VERSION,
            [META.clientCapabilities]: {},
            [META.clientInfo]: this.gatewayInfo,
          },
        },
      },
      signal,
    );
    const message = await responseTo(answer, id);
    if (answer.status === 401 || answer.status === 403) {
      // Cannot tell without credentials; decide on a later, authorized request.
      this.verdict = undefined;
    }
    const result = isRecord(message) && isRecord(message.result) ? message.result : undefined;
    const versions = result && Array.isArray(result.supportedVersions) ? result.supportedVersions : [];
    const capabilities = result && isRecord(result.capabilities) ? result.capabilities : {};
    this.upstreamServesTasks = isRecord(capabilities.extensions) && isRecord(capabilities.extensions[TASKS_EXTENSION]);
    this.probed = this.verdict !== undefined;
    const found = answer.status === 200 && versions.includes(MODERN_VERSION) ? "modern" : "legacy";
    // Refused for want of credentials, the answer says nothing about the era: this request goes on as legacy,
    // but nothing is learned (the status page says unknown, not legacy, until an authorized probe answers).
    if (this.probed) this.learned = found;
    return found;
  }
}
