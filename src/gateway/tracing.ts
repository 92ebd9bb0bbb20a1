// Tracing for startGateway (telemetry.endpoint or OTEL_EXPORTER_OTLP_*): the SDK is registered before the
// gateway is built, so it exists before anything makes a span.
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { StdioHost } from "../stdio/host.js";
import { startTracing, type Tracing } from "../telemetry/sdk.js";
import { packageInfo } from "../version.js";

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
    tracing = startTracing(config.telemetry, { version: packageInfo().version, log });
    return { gateway: build(), tracing };
  } catch (err) {
    await tracing?.shutdown();
    await stdio?.close();
    throw err;
  }
}
