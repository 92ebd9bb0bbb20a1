// The first step of building a gateway: the validated config, the logger (with the deprecation warnings the
// config raised), the clock, the audit trail, and tracing for an embedder that runs an OpenTelemetry SDK of
// its own. Nothing is started yet, so a config this step refuses leaves nothing behind.
import { takeDeprecations } from "../config/deprecations.js";
import type { GatewayConfig, GatewayConfigInput } from "../config/schema.js";
import { validConfig } from "../config/validate.js";
import { createAuditLog, type AuditLog } from "../log/audit.js";
import { createLogger, type Logger } from "../log/logger.js";
import { setTracing, tracerProviderRegistered, tracingOn } from "../telemetry/trace.js";
import { packageInfo } from "../version.js";
import type { GatewayOptions } from "./options.js";

export interface GatewaySettings {
  config: GatewayConfig;
  log: Logger;
  audit: AuditLog;
  now: () => number;
}

export function gatewaySettings(input: GatewayConfigInput | GatewayConfig, options: GatewayOptions): GatewaySettings {
  const config = validConfig(input);
  const log = options.logger ?? createLogger(config.log.level);
  for (const message of takeDeprecations()) log.warn(message);
  const now = options.now ?? Date.now;
  // An embedder that registered an OpenTelemetry SDK of its own gets the gateway's spans too (startGateway
  // starts one itself when telemetry is configured); otherwise tracing stays off and costs nothing.
  if (!tracingOn() && tracerProviderRegistered()) setTracing(true, packageInfo().version);
  if (config.upstream?.command && !options.stdio)
    throw new Error("a stdio upstream (upstream.command) needs startGateway, or a started StdioHost as options.stdio");
  return { config, log, audit: createAuditLog(log), now };
}
