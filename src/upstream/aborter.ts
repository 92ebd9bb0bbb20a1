// A cheap abort handle for undici requests on the hot path. undici accepts an
// EventEmitter that emits "abort" as a request signal; creating an
// AbortController + AbortSignal per proxied request showed up in CPU profiles
// (event-target machinery), while an EventEmitter costs next to nothing.
import { EventEmitter } from "node:events";

export class Aborter extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit("abort");
  }
}
