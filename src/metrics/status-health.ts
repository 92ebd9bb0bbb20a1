// What the status page says of an upstream's readiness probe (UpstreamClient.probe: an OPTIONS request on its
// URL). Any HTTP answer means the upstream is reachable, and that is all /readyz needs; but only a success says
// it is serving. Many MCP servers answer 405 to a method they do not serve (OPTIONS without CORS, GET without a
// stream), so a 405 is shown as reachable, never as healthy; a 5xx as failing.

/**
 * ok: it answered 2xx or 3xx; reachable: it answered, with a 4xx that says nothing of its health (405, 401, …);
 * failing: it answered 5xx; unreachable: no answer (the cause says why).
 */
export type ProbeHealth = "ok" | "reachable" | "failing" | "unreachable";

/** Why a 4xx answer is not health, as the page says it. */
const CLIENT_ERRORS: Record<number, string> = {
  401: "needs credentials",
  403: "needs credentials",
  404: "nothing at its path",
  405: "method not served",
};

export function probeHealth(p: { reachable: boolean; status?: number | undefined; cause?: string | undefined }): {
  health: ProbeHealth;
  probe: string;
} {
  if (!p.reachable) return { health: "unreachable", probe: `unreachable${p.cause ? ` (${p.cause})` : ""}` };
  const status = p.status ?? 0;
  if (status >= 200 && status < 400) return { health: "ok", probe: `answers (${status})` };
  if (status >= 500) return { health: "failing", probe: `reachable, failing (${status})` };
  const why = CLIENT_ERRORS[status];
  return { health: "reachable", probe: `reachable, ${why ?? "answered"} (${status}): not a health answer` };
}
