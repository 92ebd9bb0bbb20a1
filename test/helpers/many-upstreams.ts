// One gateway in front of many upstreams (config `upstreams`, each served at <server.path>/<name>), for the
// many-upstreams*.test.ts files: starting such a gateway, the URL of a route, and what an unknown route and a
// task of another route look like on the wire.
import { expect } from "vitest";
import { startGateway, type GatewayConfigInput, type GatewayOptions } from "../../src/index.js";
import type { TestGateway } from "./gateway.js";
import { modernRpc, type RpcAnswer } from "./modern-rpc.js";

/** The config of a test gateway: 127.0.0.1, port 0, silent logs unless `config` says otherwise. */
export function manyConfig(config: GatewayConfigInput): GatewayConfigInput {
  return {
    ...config,
    server: { host: "127.0.0.1", port: 0, ...config.server },
    log: config.log ?? { level: "silent" },
  };
}

/** A gateway started with manyConfig(config). */
export async function startManyGateway(config: GatewayConfigInput, options: GatewayOptions = {}): Promise<TestGateway> {
  return await startGateway(manyConfig(config), options);
}

/** Where the gateway serves the named upstream `name`: <gateway url>/<name> (/mcp/github). */
export function routeOf(gateway: { url: string }, name: string): string {
  return `${gateway.url}/${name}`;
}

/** A task id that was never issued, for the answer an unknown task gets. */
const NEVER_ISSUED = "never-issued-task-id";

/**
 * tasks/get of `taskId` on `url` is -32602 exactly as for an id the gateway never issued: the same error and
 * HTTP status (nothing tells the caller the task exists elsewhere). With `method`, tasks/cancel likewise.
 */
export async function expectUnknownTaskOn(
  url: string,
  taskId: string,
  opts: { method?: "tasks/get" | "tasks/cancel"; headers?: Record<string, string> } = {},
): Promise<void> {
  const method = opts.method ?? "tasks/get";
  const ask = (id: string): Promise<RpcAnswer> =>
    modernRpc(url, method, { taskId: id }, { name: id, ...(opts.headers && { headers: opts.headers }) });
  const answer = await ask(taskId);
  expect(answer.body.result, `${method} ${taskId} on ${url}`).toBeUndefined();
  expect(answer.body.error?.code).toBe(-32602);
  const reference = await ask(NEVER_ISSUED);
  expect(answer.body.error).toEqual(reference.body.error);
  expect(answer.status).toBe(reference.status);
}

/**
 * A request to a path under server.path that names no configured upstream: 404 with a JSON-RPC error body.
 * Returns the body, for a test to look further.
 */
export async function expectNoRoute(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  const text = await res.text();
  expect(res.status, `${init.method ?? "GET"} ${url}: ${text}`).toBe(404);
  expect(res.headers.get("content-type") ?? "").toContain("application/json");
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(body).toMatchObject({ jsonrpc: "2.0", error: { code: expect.any(Number), message: expect.any(String) } });
  return body;
}
