// The gateway's own tools/list of one upstream, as the request's caller (pinned definitions, docs/pinning.md):
// every page, with the caller's credential headers, on whichever era the upstream speaks: a modern upstream is
// asked directly (one stateless 2026-07-28 request per page), a legacy one on a pooled session of the era
// bridge's. A pass-through client's own session is never used: the gateway must not send on a client's session.
import type { LegacyBridge } from "../bridge-to-legacy/bridge.js";
import { MAX_TOOL_PAGES } from "../bridge-to-legacy/tool-schemas.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { META, MODERN_VERSION } from "../protocol/modern-request.js";
import type { Callers } from "../policy/sets/identity.js";
import type { ToolLister } from "../server/pinning-step.js";
import { identify } from "../server/identify.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import { postRpc, responseTo } from "../upstream/rpc.js";

const CLIENT_INFO = { name: "mcp-task-gateway", version: "pinning" };

export interface ToolListerDeps {
  callers: Callers;
  upstream: UpstreamClient;
  era: UpstreamEra;
  bridge: LegacyBridge;
  /** upstream.controlTimeoutMs: the whole listing's deadline. */
  controlTimeoutMs: number;
}

async function modernPages(upstream: UpstreamClient, credentials: string[], signal: AbortSignal): Promise<unknown[]> {
  const tools: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const id = `gw-pins-${page}`;
    const params: JsonObject = {
      ...(cursor !== undefined && { cursor }),
      _meta: {
        [META.protocolVersion]: MODERN_VERSION,
        [META.clientCapabilities]: {},
        [META.clientInfo]: CLIENT_INFO,
      },
    };
    const answer = await postRpc(
      upstream,
      [...credentials, "mcp-protocol-version", MODERN_VERSION, "mcp-method", "tools/list"],
      { jsonrpc: "2.0", id, method: "tools/list", params },
      signal,
    );
    const message = await responseTo(answer, id);
    answer.discard();
    if (!isRecord(message) || !isRecord(message.result) || !Array.isArray(message.result.tools))
      throw new Error(`the upstream refused tools/list (HTTP ${answer.status})`);
    tools.push(...(message.result.tools as unknown[]));
    cursor = typeof message.result.nextCursor === "string" ? message.result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return tools;
}

export function createToolLister(deps: ToolListerDeps): ToolLister {
  return async (ex) => {
    const controller = ex.controller();
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(deps.controlTimeoutMs)]);
    const who = identify(deps.callers, ex, signal);
    const era = await deps.era.get(who.credentialHeaders, signal);
    return era === "modern"
      ? modernPages(deps.upstream, who.credentialHeaders, signal)
      : deps.bridge.listToolsAs(who, signal);
  };
}
