// A route's caller (calls/caller.ts) for unit tests that drive a service directly: an unverified caller
// with no headers, and whatever the test sets.
import type { Caller } from "../../src/calls/caller.js";

export function testCaller(fields: Partial<Caller> & Pick<Caller, "caller">): Caller {
  return {
    subject: undefined,
    claims: undefined,
    partition: undefined,
    credentialHeaders: [],
    upstreamHeaders: [],
    traceHeaders: [],
    signal: new AbortController().signal,
    ...fields,
  };
}
