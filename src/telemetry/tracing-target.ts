// Whether tracing is configured, and where spans go: decided from the config and the environment alone, so
// the composition root can tell without loading the OpenTelemetry SDK (sdk.ts), which it imports only then.
import type { GatewayConfig } from "../config/schema.js";

/** What the started SDK gives back. */
export interface Tracing {
  /** Exports every span ended so far. */
  forceFlush(): Promise<void>;
  /** This gateway is done with tracing; the last one flushes and unregisters the SDK. Idempotent. */
  shutdown(): Promise<void>;
}

/**
 * Where spans go, or undefined when tracing is off. `url` undefined: the exporter reads the
 * OTEL_EXPORTER_OTLP_* environment itself (endpoint, headers, timeout).
 */
export function tracingTarget(
  settings: GatewayConfig["telemetry"],
  env: NodeJS.ProcessEnv,
): { url: string | undefined } | undefined {
  if (settings.endpoint !== undefined) return { url: `${settings.endpoint.replace(/\/+$/, "")}/v1/traces` };
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return undefined;
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT) return { url: undefined };
  return undefined;
}
