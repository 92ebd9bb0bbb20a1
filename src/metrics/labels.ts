// Label values for the request metrics: every function here maps an unbounded
// input (a JSON-RPC method, an HTTP status, a tool name) onto a small fixed set,
// so no client can grow the number of series.

/**
 * The `upstream` label of a request that went to no one upstream: /metrics, /status, a path no upstream is served
 * at, or a federated endpoint's request answered from several members (a merged list) or by the gateway itself.
 * Configured names match ^[a-z0-9][a-z0-9_-]*$, so it can never be one.
 */
export const NO_UPSTREAM_LABEL = "(none)";

/** The era a request was served in: a 2026-07-28 request, a legacy (≤ 2025-11-25) one, or neither (health, metrics). */
export type EraLabel = "modern" | "legacy" | "none";

const CLASSES: Record<string, string> = {
  initialize: "initialize",
  ping: "ping",
  "tools/call": "tools/call",
  "tools/list": "tools/list",
  "server/discover": "discover",
  "subscriptions/listen": "listen",
};

const PREFIXES: ReadonlyArray<readonly [string, string]> = [
  ["tasks/", "tasks"],
  ["notifications/", "notification"],
  ["resources/", "resources"],
  ["prompts/", "prompts"],
  ["completion/", "other"],
];

/**
 * The class of a JSON-RPC message: a few named methods, method families (tasks, notifications, resources,
 * prompts), "response" (a client's answer to a server request), "batch", and "other".
 */
export function methodClass(message: unknown): string {
  if (Array.isArray(message)) return "batch";
  const method = typeof message === "object" && message !== null ? (message as { method?: unknown }).method : undefined;
  if (typeof method !== "string") return "response";
  const named = CLASSES[method];
  if (named !== undefined) return named;
  for (const [prefix, cls] of PREFIXES) if (method.startsWith(prefix)) return cls;
  return "other";
}

/** The class of a request that carries no JSON-RPC message: its HTTP method. */
export function httpMethodClass(method: string): string {
  switch (method) {
    case "GET":
      return "get";
    case "DELETE":
      return "delete";
    case "OPTIONS":
      return "options";
    case "POST":
      return "invalid";
    default:
      return "other";
  }
}

const STATUS_LABELS = new Map<number, string>();
for (let s = 100; s < 600; s++) STATUS_LABELS.set(s, String(s));

/** An HTTP status as a label: the code when it is one (100–599), else "other". */
export function statusLabel(status: number): string {
  return STATUS_LABELS.get(status) ?? "other";
}

/** The status classes, indexed by statusClassIndex: "other", "1xx" … "5xx", and "error" (no response) last. */
export const STATUS_CLASSES = ["other", "1xx", "2xx", "3xx", "4xx", "5xx", "error"] as const;
/** The index of "error" in STATUS_CLASSES: an upstream request that got no response. */
export const ERROR_CLASS = 6;

/** A status's index in STATUS_CLASSES (1 for 1xx … 5 for 5xx; 0, "other", outside 100–599): no string built. */
export function statusClassIndex(status: number): number {
  return status >= 100 && status < 600 ? Math.floor(status / 100) : 0;
}

/** "2xx", "4xx", … for a status; "other" outside 100–599. */
export function statusClass(status: number): string {
  return STATUS_CLASSES[statusClassIndex(status)] as string;
}

/** Maps tool names onto the ones metrics.toolLabels lists; every other name (and none) is "other". */
export function toolLabeler(listed: readonly string[]): (tool: string | undefined) => string {
  const known = new Set(listed);
  return (tool) => (tool !== undefined && known.has(tool) ? tool : "other");
}
