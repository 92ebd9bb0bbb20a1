// startGateway's Node listeners: the MCP app's (behind the lean tasks/get path), the internal listener other
// replicas forward to (shared state only), and /metrics and /status on a listener of their own (metrics.port).
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:http";
import { createAdaptorServer, getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import type { ServedApp } from "./app.js";
import { forwardingKey } from "../replicas/forward-token.js";
import { internalListener } from "../replicas/internal-listener.js";
import type { SharedTasks } from "../shared-tasks.js";
import type { InternalTls } from "./internal-tls.js";

export interface Listeners {
  readonly server: Server;
  /** Other replicas forward task control and MRTR retries here; undefined without shared state. */
  readonly internal: Server | undefined;
  /** metrics.port: /metrics and /status on a listener of their own; undefined otherwise. */
  readonly metrics: Server | undefined;
}

/** The servers, not listening yet. */
export function createListeners(
  gateway: ServedApp & { metricsApp: Hono | undefined },
  shared: SharedTasks | undefined,
  now: () => number,
  /** server.maxBodyBytes: the internal listener reads a forwarded request's body to check its credential. */
  maxBodyBytes: number,
  tls?: InternalTls,
): Listeners {
  const hono = getRequestListener(gateway.app.fetch);
  return {
    // getRequestListener answers its own failures (500), so the promise it returns never rejects.
    server: createServer(gateway.nodeListener((req, res) => void hono(req, res))),
    internal: shared && internalListener(gateway.app, forwardingKey(shared.requestStateKey), now, maxBodyBytes, tls),
    metrics: gateway.metricsApp && (createAdaptorServer({ fetch: gateway.metricsApp.fetch }) as Server),
  };
}

function formatHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

async function listen(server: Server, port: number, host: string, exclusive: boolean): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // exclusive: a cluster worker's internal listener gets a port of its own (port 0 would be shared otherwise).
    server.listen({ port, host, exclusive }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}

/**
 * Listens on every listener, the MCP app's first, and registers the internal listener's address for other
 * replicas. On a failure every listener is closed before the error is thrown on.
 */
export async function listenAll(
  listeners: Listeners,
  config: GatewayConfig,
  shared: SharedTasks | undefined,
): Promise<{ origin: string; metricsOrigin: string | undefined }> {
  const { server, internal, metrics } = listeners;
  const { host } = config.server;
  const metricsHost = config.metrics.host ?? host;
  let metricsOrigin: string | undefined;
  try {
    const at = await listen(server, config.server.port, host, false);
    if (metrics) {
      const metricsAt = await listen(metrics, config.metrics.port ?? 0, metricsHost, false);
      metricsOrigin = `http://${formatHost(metricsHost)}:${metricsAt.port}`;
    }
    if (internal && shared) {
      const internalAt = await listen(internal, config.server.internalPort, config.server.internalHost, true);
      await shared.leases.register(
        config.server.advertiseUrl ??
          `${config.server.internalTls ? "https" : "http"}://${formatHost(config.server.internalHost)}:${internalAt.port}`,
      );
    }
    return { origin: `http://${formatHost(host)}:${at.port}`, metricsOrigin };
  } catch (err) {
    internal?.close();
    metrics?.close();
    server.close();
    throw err;
  }
}
