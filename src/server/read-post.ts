// Reads and parses a client's POST message once, for every step and endpoint that needs it: the byte limit (413)
// and malformed JSON (400, -32700) are answered here. A body read before the pipeline ran (the lean tasks/get
// path, a federated member's view) is on the Exchange already: a request body can be read only once.
import type { Logger } from "../log/logger.js";
import { errorResponse, parseJsonRpcBody } from "../protocol/jsonrpc.js";
import { bodyTooLarge } from "../protocol/errors.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import { readLimitedBody, readNodeBody, type BodyResult } from "./limited-body.js";
import type { Exchange, PostBody } from "./exchange.js";

export function isJsonContentType(ct: string | undefined): boolean {
  // MCP requires application/json; a missing type is still checked so that a
  // garbage body gets a clear -32700 from us instead of an opaque upstream error.
  // The type every MCP client sends is taken as it is, without the pattern (a poll's most frequent header check).
  return ct === undefined || ct === "application/json" || /^application\/(?:[\w.+-]+\+)?json\b/i.test(ct.trim());
}

async function* webBody(req: Request): AsyncIterable<Uint8Array> {
  if (!req.body) return;
  const reader = req.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** The body, limited: the one read of it, or the one read before the pipeline ran. */
function readBody(ex: Exchange, maxBodyBytes: number): Promise<BodyResult> {
  const handed = ex.preRead;
  if (handed) {
    ex.preRead = undefined;
    return Promise.resolve(handed);
  }
  const declared = ex.header("content-length");
  if (ex.node) return readNodeBody(ex.node.incoming, maxBodyBytes, declared);
  return readLimitedBody(webBody(ex.webRequest()), maxBodyBytes, declared);
}

/** Reads and parses the POST's body onto the Exchange (ex.post); a refusal is the answer to send. */
export async function readPost(ex: Exchange, maxBodyBytes: number, log: Logger): Promise<Response | undefined> {
  const read = await readBody(ex, maxBodyBytes);
  if (!read.ok) {
    if (read.reason === "aborted") return new Response(null, { status: 400 });
    log.warn("request body too large", { limit: maxBodyBytes });
    return faultResponse(null, bodyTooLarge(maxBodyBytes));
  }
  let post: PostBody;
  if (!isJsonContentType(ex.header("content-type"))) post = { body: read.body, parsed: undefined };
  else {
    const parsed = parseJsonRpcBody(read.body);
    if (!parsed.ok) return jsonResponse(400, errorResponse(null, parsed.error));
    post = { body: read.body, parsed };
  }
  ex.post = post;
  return undefined;
}
