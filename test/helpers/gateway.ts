import { startGateway } from "../../src/index.js";

export type TestGateway = Awaited<ReturnType<typeof startGateway>>;

export interface TestGatewayOverrides {
  upstream?: { connectTimeoutMs?: number; headersTimeoutMs?: number; idleTimeoutMs?: number };
  server?: { path?: string; maxBodyBytes?: number; sseKeepAliveMs?: number };
}

/** A gateway on 127.0.0.1, port 0, silent logs, in front of `upstreamUrl`. */
export async function startTestGateway(
  upstreamUrl: string,
  overrides: TestGatewayOverrides = {},
): Promise<TestGateway> {
  return await startGateway({
    upstream: { url: upstreamUrl, ...overrides.upstream },
    server: { host: "127.0.0.1", port: 0, ...overrides.server },
    log: { level: "silent" },
  });
}
