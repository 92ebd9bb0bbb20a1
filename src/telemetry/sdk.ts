// The OpenTelemetry SDK, wired only when tracing is configured (telemetry.endpoint,
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT): a
// NodeTracerProvider (AsyncLocalStorage context, W3C propagators) with a
// BatchSpanProcessor and the OTLP/HTTP (JSON) exporter, resource service.name /
// service.version. Only the composition root (src/gateway/tracing.ts) loads this
// file, with a dynamic import taken only when tracing-target.ts says tracing is
// configured: the SDK costs a start without tracing nothing (ESLint forbids a
// static import of it anywhere in src/). Every other layer talks to
// @opentelemetry/api through telemetry/trace.ts.
//
// One provider per process, shared by every gateway started in it (tests start
// several): the first start registers it, the last close flushes and removes it.
import { context, diag, DiagLogLevel, propagation, trace } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { setTracing } from "./trace.js";
import { tracingTarget, type Tracing } from "./tracing-target.js";

const DEFAULT_SERVICE_NAME = "mcp-task-gateway";

let shared: { provider: NodeTracerProvider; users: number } | undefined;

/** Starts (or joins) the process's tracing SDK; undefined when tracing is not configured. */
export function startTracing(
  settings: GatewayConfig["telemetry"],
  opts: { version: string; log: Logger; env?: NodeJS.ProcessEnv },
): Tracing | undefined {
  const env = opts.env ?? process.env;
  const target = tracingTarget(settings, env);
  if (!target) return undefined;
  if (!shared) {
    // The SDK's own troubles (an unreachable collector) go to the log, as warnings, never to the client.
    const say = (message: string): void => opts.log.warn("telemetry", { cause: message });
    diag.setLogger({ error: say, warn: say, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
    const serviceName = settings.serviceName ?? env.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAME;
    const resource = defaultResource()
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, [ATTR_SERVICE_VERSION]: opts.version }));
    const exporter = new OTLPTraceExporter(target.url === undefined ? {} : { url: target.url });
    const provider = new NodeTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(exporter)],
      ...(settings.sampleRatio !== undefined && {
        sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
      }),
    });
    provider.register();
    shared = { provider, users: 0 };
    setTracing(true, opts.version);
    opts.log.info("tracing on: spans are exported over OTLP/HTTP", {
      service: serviceName,
      endpoint: target.url ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT,
    });
  }
  const mine = shared;
  mine.users += 1;
  let closed = false;
  return {
    forceFlush: () => mine.provider.forceFlush(),
    shutdown: async () => {
      if (closed) return;
      closed = true;
      mine.users -= 1;
      if (mine.users > 0) {
        await mine.provider.forceFlush();
        return;
      }
      if (shared === mine) shared = undefined;
      setTracing(false);
      await mine.provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
      diag.disable();
    },
  };
}
