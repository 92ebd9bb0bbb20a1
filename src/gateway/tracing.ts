// Tracing for startGateway (telemetry.endpoint or OTEL_EXPORTER_OTLP_*): the SDK is registered before the
// gateway is built, so it exists before anything makes a span. It is loaded only then: a dynamic import, so a
// gateway without tracing never loads the OpenTelemetry SDK (bench/RESULTS.md: start time and RSS).
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { StdioHost } from "../stdio/host.js";
import { tracingTarget, type Tracing } from "../telemetry/tracing-target.js";
import { packageInfo } from "../version.js";

/** Starts (or joins) the process's tracing SDK when tracing is configured; undefined otherwise. */
async function startTracingIfConfigured(config: GatewayConfig, log: Logger): Promise<Tracing | undefined> {
  if (!tracingTarget(config.telemetry, process.env)) return undefined;
  const { startTracing } = await import("../telemetry/sdk.js");
  return startTracing(config.telemetry, { version: packageInfo().version, log });
}

/**
 * Starts tracing, then builds the gateway with `build`. Nothing listens yet, but the stdio host does, and
 * tracing may: neither may outlive a start that failed, so both are closed before the error is thrown on.
 */
export async function tracedStart<G>(
  config: GatewayConfig,
  log: Logger,
  stdio: StdioHost | undefined,
  build: () => G,
): Promise<{ gateway: G; tracing: Tracing | undefined }> {
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracingIfConfigured(config, log);
    return { gateway: build(), tracing };
  } catch (err) {
    await tracing?.shutdown();
    await stdio?.close();
    throw err;
  }
}
