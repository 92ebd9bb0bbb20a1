// What a modern client is answered when its call could not be made on a legacy
// upstream: a refused session (with the upstream's own error when it sent one,
// and a 401/403 challenge kept as it is, so OAuth starts as on a direct
// connection), or the transport failure mapped the one way every path maps it.
import { isRecord } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import { modernError } from "../protocol/era-translate.js";
import { upstreamFault, upstreamSessionFault, type Fault } from "../protocol/errors.js";
import { UpstreamSessionError } from "./legacy-sessions.js";

export function legacyCallFault(err: unknown, upstream: string): Fault {
  if (!(err instanceof UpstreamSessionError)) return upstreamFault(err, upstream);
  const fault: Fault =
    isRecord(err.body) && isRecord(err.body.error)
      ? { status: err.status >= 500 ? 502 : 200, error: modernError(err.body.error as unknown as JsonRpcErrorObject) }
      : upstreamSessionFault(upstream, err.message, err.status);
  if (err.status === 401 || err.status === 403) {
    return {
      ...fault,
      status: err.status,
      headers: err.wwwAuthenticate ? { "www-authenticate": err.wwwAuthenticate } : undefined,
    };
  }
  return fault;
}
