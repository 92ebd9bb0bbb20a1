// Reads and parses a client's POST message once, for every route that needs it:
// the byte limit (413) and malformed JSON (400, -32700) are answered here.
import type { Context } from "hono";
import type { Logger } from "../log/logger.js";
import { errorResponse, parseJsonRpcBody, type ParsedBody } from "../protocol/jsonrpc.js";
import { jsonResponse } from "../web/json-response.js";
import { readLimitedBody, readNodeBody } from "./limited-body.js";
import { payloadTooLarge } from "./errors.js";
import { requestHeader, type NodeEnv } from "./node-env.js";

export interface PostBody {
  body: Buffer;
  /** Undefined when the content type is not JSON (the upstream judges such bodies). */
  parsed: Extract<ParsedBody, { ok: true }> | undefined;
}

function isJsonContentType(ct: string | undefined): boolean {
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

export async function readPost(
  c: Context,
  env: NodeEnv | undefined,
  maxBodyBytes: number,
  log: Logger,
): Promise<PostBody | Response> {
  const declared = requestHeader(c, env, "content-length");
  const read = env
    ? await readNodeBody(env.incoming, maxBodyBytes, declared)
    : await readLimitedBody(webBody(c.req.raw), maxBodyBytes, declared);
  if (!read.ok) {
    if (read.reason === "aborted") return new Response(null, { status: 400 });
    log.warn("request body too large", { limit: maxBodyBytes });
    return payloadTooLarge(maxBodyBytes);
  }
  if (!isJsonContentType(requestHeader(c, env, "content-type"))) return { body: read.body, parsed: undefined };
  const parsed = parseJsonRpcBody(read.body);
  if (!parsed.ok) return jsonResponse(400, errorResponse(null, parsed.error));
  return { body: read.body, parsed };
}
