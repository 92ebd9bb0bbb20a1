// The one way the gateway builds a JSON answer of its own (errors, bridged
// results, task methods): a web-standard Response, no I/O. Every layer that
// answers a client uses it, so status, body and content type stay consistent.

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return jsonTextResponse(status, JSON.stringify(body), headers);
}

/** For a body already serialized (a cached task answer). */
export function jsonTextResponse(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { "content-type": "application/json", ...headers } });
}
