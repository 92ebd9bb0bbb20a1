// MRTR over a legacy upstream: a call that needs input from the client is
// parked here, and the client gets `input_required` with a signed requestState
// that points back to it. The retry claims the parked call (once), its answers
// go upstream under the upstream's own request ids, and the call goes on.
// Parked calls are bounded overall and per caller and expire; one that is
// abandoned is cancelled upstream.
import { isRecord, type JsonObject } from "../protocol/json.js";
import { argumentsTooDeep, invalidRequestState, tooManyPendingInputs, type Fault } from "../protocol/errors.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import type { LegacyCall } from "./legacy-call.js";
import type { ClientLeg } from "../calls/client-leg.js";
import { ParkedCalls, type ParkLimits } from "./parked-calls.js";
import { newExchangeId, paramsDigest, RequestStateCodec } from "./request-state.js";

export class Mrtr {
  private readonly codec: RequestStateCodec;
  private readonly parked: ParkedCalls<LegacyCall>;

  constructor(
    private readonly limits: ParkLimits,
    now: () => number,
    /** This replica: a retry whose state names another is forwarded there. */
    private readonly replicaId: string,
    /** The signing key; replicas that share tasks share it, so any of them can check a retry. */
    key?: Buffer,
  ) {
    this.codec = new RequestStateCodec(now, key);
    this.parked = new ParkedCalls<LegacyCall>(limits, (call) => call.cancel("input request abandoned"), now);
  }

  get size(): number {
    return this.parked.size;
  }

  /** Parks the call and answers the leg with input_required (or with the reason it cannot be parked). */
  park(req: ModernRequest, caller: string, call: LegacyCall, leg: ClientLeg): void {
    const refuse = (reason: string, fault: Fault): void => {
      call.cancel(reason);
      leg.error(fault.error, fault.status);
    };
    let digest: string;
    try {
      digest = paramsDigest(req.method, req.params);
    } catch {
      refuse("arguments too deeply nested", argumentsTooDeep());
      return;
    }
    const exchangeId = newExchangeId();
    if (!this.parked.park(exchangeId, caller, call)) {
      refuse("too many pending input requests", tooManyPendingInputs(this.limits.maxPerCaller));
      return;
    }
    const requestState = this.codec.seal(
      { x: exchangeId, p: caller, m: req.method, d: digest, r: this.replicaId },
      this.limits.ttlMs,
    );
    const inputRequests: JsonObject = {};
    for (const [key, p] of call.pending) inputRequests[key] = p.request;
    leg.result({ resultType: "input_required", inputRequests, requestState });
  }

  /** The other replica that holds the call a valid retry points to; undefined when it is this one (or the state is not valid). */
  runnerOf(req: ModernRequest, caller: string): string | undefined {
    const opened = this.codec.open(req.params.requestState, {
      p: caller,
      m: req.method,
      d: () => paramsDigest(req.method, req.params),
    });
    return opened.ok && opened.claims.r !== undefined && opened.claims.r !== this.replicaId
      ? opened.claims.r
      : undefined;
  }

  /**
   * A retry: claims the parked call its requestState points to and delivers the
   * client's answers upstream. Unknown keys are ignored; keys still unanswered
   * stay in `call.pending` (the caller parks the call again for them).
   */
  async resume(
    req: ModernRequest,
    caller: string,
  ): Promise<{ call: LegacyCall } | { fault: Fault } | { failed: LegacyCall; error: unknown }> {
    const opened = this.codec.open(req.params.requestState, {
      p: caller,
      m: req.method,
      d: () => paramsDigest(req.method, req.params),
    });
    const call = opened.ok ? this.parked.claim(opened.claims.x, caller) : undefined;
    if (!call) return { fault: invalidRequestState(opened.ok ? "unknown_or_used" : opened.reason) };
    const responses = isRecord(req.params.inputResponses) ? req.params.inputResponses : {};
    const answers: Array<Promise<void>> = [];
    for (const [key, p] of [...call.pending]) {
      if (!(key in responses)) continue;
      call.pending.delete(key);
      answers.push(call.deliver(p.upstreamRequestId, { result: responses[key] }));
    }
    try {
      await Promise.all(answers);
    } catch (error) {
      call.cancel("could not deliver input responses");
      return { failed: call, error };
    }
    return { call };
  }

  /** Shutdown: every parked call is cancelled upstream. */
  clear(): void {
    this.parked.clear();
  }
}
