// startGateway's Node listeners: the MCP app's (behind the lean tasks/get path), the internal listener other
// replicas forward to (shared state only), and /metrics and /status on a listener of their own (metrics.port).
import { chmod, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:http";
import { createAdaptorServer, getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import type { ServedApp } from "./app.js";
import { forwardingKey } from "../replicas/forward-token.js";
import { internalListeners } from "../replicas/internal-listener.js";
import type { SharedTasks } from "../shared-tasks.js";
import type { InternalTls } from "./internal-tls.js";

export interface Listeners {
  readonly server: Server;
  /** Other replicas forward task control and MRTR retries here; undefined without shared state. */
  readonly internal: Server | undefined;
  /**
   * server.internalSocketDir: the internal listener's Unix socket, for replicas of this host (the same handler, so
   * the same credential check); undefined otherwise.
   */
  readonly local: { server: Server; path: string } | undefined;
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
  /** server.internalSocketDir: the path of this replica's socket in it. */
  socketPath?: string,
): Listeners {
  const hono = getRequestListener(gateway.app.fetch);
  const internal =
    shared &&
    internalListeners(
      gateway.app,
      forwardingKey(shared.requestStateKey),
      now,
      maxBodyBytes,
      tls,
      socketPath !== undefined,
    );
  return {
    // getRequestListener answers its own failures (500), so the promise it returns never rejects.
    server: createServer(gateway.nodeListener((req, res) => void hono(req, res))),
    internal: internal?.tcp,
    local: internal?.local && socketPath !== undefined ? { server: internal.local, path: socketPath } : undefined,
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
 * Listens on `path`, a Unix socket only this user may connect to (its directory is 0700 too). A socket left there
 * by an earlier process with this replica id is replaced: two live replicas never share an id.
 */
async function listenLocal(server: Server, path: string): Promise<void> {
  await rm(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ path, exclusive: true }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  await chmod(path, 0o600);
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
  const { server, internal, local, metrics } = listeners;
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
      // The socket first: a replica of this host that finds the registration may use the socket at once.
      if (local) await listenLocal(local.server, local.path);
      const internalAt = await listen(internal, config.server.internalPort, config.server.internalHost, true);
      await shared.leases.register(
        config.server.advertiseUrl ??
          `${config.server.internalTls ? "https" : "http"}://${formatHost(config.server.internalHost)}:${internalAt.port}`,
      );
    }
    return { origin: `http://${formatHost(host)}:${at.port}`, metricsOrigin };
  } catch (err) {
    internal?.close();
    local?.server.close();
    metrics?.close();
    server.close();
    throw err;
  }
}
