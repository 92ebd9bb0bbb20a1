// The client pair of the era-bridging tests: 2026-07-28 modern clients through
// the gateway, and the reference, an SDK 1.x client talking to the legacy
// upstream directly. Every connection is closed in the file's afterAll.
import type { CallToolResult as LegacyCallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { connectModernClient, type ModernClientHandle, type ModernClientOptions } from "./modern-client.js";
import { connectSdkClient, type SdkClientHandle, type SdkClientOptions } from "./sdk-client.js";

export interface EraClients {
  /** A new modern client through the gateway (closed with the others). */
  modern(opts?: ModernClientOptions): Promise<ModernClientHandle>;
  /** The modern client through the gateway, shared by the tests that need no special options. */
  client(): Promise<ModernClientHandle>;
  /** The reference: an SDK 1.x client straight to the upstream, shared. */
  legacy(): Promise<SdkClientHandle>;
  /** A tools/call on the reference client; it must answer a tool result. */
  legacyCall(name: string, args: Record<string, unknown>): Promise<LegacyCallToolResult>;
}

export function eraClients(
  urls: () => { direct: string; gateway: string },
  legacyOptions: SdkClientOptions,
  hooks: { afterAll: (fn: () => Promise<void>) => void },
): EraClients {
  const handles: Array<{ close(): Promise<void> }> = [];
  hooks.afterAll(async () => {
    await Promise.all(handles.map((h) => h.close()));
  });

  const modern = async (opts?: ModernClientOptions): Promise<ModernClientHandle> => {
    const h = await connectModernClient(urls().gateway, opts);
    handles.push(h);
    return h;
  };

  let sharedModern: Promise<ModernClientHandle> | undefined;
  const client = (): Promise<ModernClientHandle> => (sharedModern ??= modern());

  let sharedLegacy: Promise<SdkClientHandle> | undefined;
  const legacy = (): Promise<SdkClientHandle> =>
    (sharedLegacy ??= connectSdkClient(urls().direct, legacyOptions).then((h) => {
      handles.push(h);
      return h;
    }));

  const legacyCall = async (name: string, args: Record<string, unknown>): Promise<LegacyCallToolResult> => {
    const r = await (await legacy()).client.callTool({ name, arguments: args });
    if (!("content" in r)) throw new Error(`unexpected legacy result shape: ${JSON.stringify(r)}`);
    return r as LegacyCallToolResult;
  };

  return { modern, client, legacy, legacyCall };
}
