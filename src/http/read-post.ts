// Reads and parses a client's POST message once, for every route that needs it:
// the byte limit (413) and malformed JSON (400, -32700) are answered here.
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import type { Logger } from "../log/logger.js";
import { errorResponse, parseJsonRpcBody, type ParsedBody } from "../protocol/jsonrpc.js";
import { bodyTooLarge } from "../protocol/errors.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import { readLimitedBody, readNodeBody, type BodyResult } from "./limited-body.js";
import { requestHeader, type NodeEnv } from "./node-env.js";

export interface PostBody {
  body: Buffer;
  /** Undefined when the content type is not JSON (the upstream judges such bodies). */
  parsed: Extract<ParsedBody, { ok: true }> | undefined;
}

export function isJsonContentType(ct: string | undefined): boolean {
  // MCP requires application/json; a missing type is still checked so that a
  // garbage body gets a clear -32700 from us instead of an opaque upstream error.
  return ct === undefined || /^application\/(?:[\w.+-]+\+)?json\b/i.test(ct.trim());
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

/**
 * Bodies a path in front of Hono already read (the lean tasks/get path, when it hands a request on):
 * a request body can be read only once, so the read is handed over with the request.
 */
const preRead = new WeakMap<IncomingMessage, BodyResult>();

/** Hands a request whose body was read already on to `readPost`. */
export function handOverBody(incoming: IncomingMessage, read: BodyResult): void {
  preRead.set(incoming, read);
}

/** The body of a Node request, limited: the one read of it, or the one the lean tasks/get path handed over. */
function readNodePost(incoming: IncomingMessage, maxBodyBytes: number): Promise<BodyResult> {
  const handed = preRead.get(incoming);
  if (handed) {
    preRead.delete(incoming);
    return Promise.resolve(handed);
  }
  const declared = incoming.headers["content-length"];
  return readNodeBody(incoming, maxBodyBytes, declared);
}

export async function readPost(
  c: Context,
  env: NodeEnv | undefined,
  maxBodyBytes: number,
  log: Logger,
): Promise<PostBody | Response> {
  const read = env
    ? await readNodePost(env.incoming, maxBodyBytes)
    : await readLimitedBody(webBody(c.req.raw), maxBodyBytes, requestHeader(c, env, "content-length"));
  if (!read.ok) {
    if (read.reason === "aborted") return new Response(null, { status: 400 });
    log.warn("request body too large", { limit: maxBodyBytes });
    return faultResponse(null, bodyTooLarge(maxBodyBytes));
  }
  if (!isJsonContentType(requestHeader(c, env, "content-type"))) return { body: read.body, parsed: undefined };
  const parsed = parseJsonRpcBody(read.body);
  if (!parsed.ok) return jsonResponse(400, errorResponse(null, parsed.error));
  return { body: read.body, parsed };
}
