import { startGateway, type GatewayConfigInput, type GatewayOptions } from "../../src/index.js";

export type TestGateway = Awaited<ReturnType<typeof startGateway>>;

export interface TestGatewayOverrides {
  upstream?: {
    connectTimeoutMs?: number;
    headersTimeoutMs?: number;
    idleTimeoutMs?: number;
    controlTimeoutMs?: number;
    era?: "auto" | "legacy" | "modern";
  };
  server?: { path?: string; maxBodyBytes?: number; sseKeepAliveMs?: number; shutdownGraceMs?: number };
  /** Era bridge settings (input request TTL, session limits). */
  eraBridge?: GatewayConfigInput["eraBridge"];
  /** Task engine settings (threshold, per-tool rules, poll interval, limits). */
  tasks?: GatewayConfigInput["tasks"];
  /** Tool access rules. */
  access?: GatewayConfigInput["access"];
  /** Rate limits. */
  limits?: GatewayConfigInput["limits"];
  /** Log level (default silent); with `logger`, what the injected logger is told its level is not changed. */
  log?: GatewayConfigInput["log"];
  /** Injected logger (audit lines, reload warnings) and clock. */
  logger?: GatewayOptions["logger"];
  now?: GatewayOptions["now"];
}

/** A gateway on 127.0.0.1, port 0, silent logs, in front of `upstreamUrl`. */
export async function startTestGateway(
  upstreamUrl: string,
  overrides: TestGatewayOverrides = {},
): Promise<TestGateway> {
  return await startGateway(testGatewayConfig(upstreamUrl, overrides), {
    ...(overrides.logger && { logger: overrides.logger }),
    ...(overrides.now && { now: overrides.now }),
  });
}

/** The config startTestGateway starts with (also what a test passes to `reload` with changes). */
export function testGatewayConfig(upstreamUrl: string, overrides: TestGatewayOverrides = {}): GatewayConfigInput {
  return {
    upstream: { url: upstreamUrl, ...overrides.upstream },
    server: { host: "127.0.0.1", port: 0, ...overrides.server },
    log: overrides.log ?? { level: "silent" },
    ...(overrides.tasks === undefined ? {} : { tasks: overrides.tasks }),
    ...(overrides.access === undefined ? {} : { access: overrides.access }),
    ...(overrides.limits === undefined ? {} : { limits: overrides.limits }),
    ...(overrides.eraBridge === undefined ? {} : { eraBridge: overrides.eraBridge }),
  };
}

export interface UpstreamHandle {
  url: string;
  close(): Promise<void>;
}

/**
 * Starts an upstream and a gateway in front of it for a whole describe block
 * (beforeAll/afterAll), and hands back live getters for both.
 */
export function gatewayInFrontOf<U extends UpstreamHandle>(
  startUpstream: () => Promise<U>,
  hooks: { beforeAll: (fn: () => Promise<void>) => void; afterAll: (fn: () => Promise<void>) => void },
  overrides: TestGatewayOverrides = {},
): { upstream: () => U; gateway: () => TestGateway; urls: () => { direct: string; gateway: string } } {
  let upstream: U | undefined;
  let gateway: TestGateway | undefined;
  hooks.beforeAll(async () => {
    upstream = await startUpstream();
    gateway = await startTestGateway(upstream.url, overrides);
  });
  hooks.afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not started (used outside the describe block's tests?)`);
    return v;
  };
  return {
    upstream: () => need(upstream, "upstream"),
    gateway: () => need(gateway, "gateway"),
    urls: () => ({ direct: need(upstream, "upstream").url, gateway: need(gateway, "gateway").url }),
  };
}
