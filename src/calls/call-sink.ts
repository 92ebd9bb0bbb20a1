// Where an upstream call's messages go. A plain client leg (answer, stream, or
// MRTR park) and a task are different sinks, so promoting a call to a task is
// a change of sink while the same upstream stream keeps being read. The reader
// (bridge-to-legacy/drive.ts, modern-upstream/task-front.ts) knows nothing of either.
import type { JsonObject } from "../protocol/json.js";
import { logPasses } from "../protocol/era-translate.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { LogLevelName } from "../protocol/modern-request.js";
import type { PendingInput } from "../protocol/input-requests.js";
import type { ClientLeg } from "./client-leg.js";

export interface LegOptions {
  logLevel: LogLevelName | undefined;
  clientCapabilities: JsonObject;
}

export interface CallSink {
  /** Capabilities declared by the request that started the call: input is asked only for these. */
  readonly clientCapabilities: JsonObject;
  /** Registers a listener for a consumer that went away (a client that disconnected before its answer). */
  onGone(listener: () => void): void;
  progress(params: JsonObject): void;
  log(params: JsonObject): void;
  /**
   * The call's unanswered input requests, after a new one arrived. "park": stop
   * reading until the answers come (MRTR); "continue": keep reading (tasks). A
   * promise when the answer depends on a promotion still being stored: the
   * reader waits for it, since only one of the two may go on reading the call.
   */
  inputRequired(pending: ReadonlyMap<string, PendingInput>): InputVerdict | Promise<InputVerdict>;
  result(result: JsonObject): void;
  error(error: JsonRpcErrorObject, status: number, headers?: Record<string, string>): void;
}

export type InputVerdict = "park" | "continue";

/** A plain client leg: progress re-stamped with the leg's token, logs by opt-in level, input parked as MRTR. */
export class LegSink implements CallSink {
  constructor(
    private readonly leg: ClientLeg,
    private readonly opts: LegOptions,
    /** Parks the call for an MRTR round trip and answers the leg with input_required. */
    private readonly park: (leg: ClientLeg) => void,
  ) {}

  get clientCapabilities(): JsonObject {
    return this.opts.clientCapabilities;
  }

  onGone(listener: () => void): void {
    this.leg.onClose(listener);
  }

  progress(params: JsonObject): void {
    if (this.leg.progressToken === undefined) return;
    this.leg.notify({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { ...params, progressToken: this.leg.progressToken },
    });
  }

  log(params: JsonObject): void {
    if (logPasses(params.level, this.opts.logLevel))
      this.leg.notify({ jsonrpc: "2.0", method: "notifications/message", params });
  }

  inputRequired(): "park" {
    this.park(this.leg);
    return "park";
  }

  result(result: JsonObject): void {
    this.leg.result(result);
  }

  error(error: JsonRpcErrorObject, status: number, headers?: Record<string, string>): void {
    this.leg.error(error, status, headers);
  }
}
