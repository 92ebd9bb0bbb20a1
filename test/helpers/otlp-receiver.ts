// A local OTLP/HTTP receiver (JSON encoding, POST /v1/traces) that keeps every span it is sent, for tests
// that start a gateway with telemetry.endpoint pointing at it.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  events?: Array<{ name: string }>;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number };
}
export interface ExportedSpan extends OtlpSpan {
  service: string | undefined;
}

export const KIND = { internal: 1, server: 2, client: 3 } as const;

export interface OtlpReceiver {
  endpoint: string;
  spans: ExportedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ExportedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || !(req.headers["content-type"] ?? "").includes("json")) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans?: Array<{
          resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
          scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
        }>;
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = rs.resource?.attributes?.find((a) => a.key === "service.name")?.value.stringValue;
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const attr = (s: OtlpSpan, key: string): string | number | boolean | undefined => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
};
