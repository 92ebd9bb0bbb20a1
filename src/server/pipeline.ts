// The request pipeline: one ordered list of steps, built once per kind of endpoint from the shared steps
// (steps.ts), run over each request's Exchange. A step answers (a refusal: the pipeline stops there), or lets the
// request go on, having noted what it learnt on the Exchange. The last entry, the endpoint's handler, always answers.
//
// The order every endpoint keeps (an endpoint leaves out what does not concern it, never reorders):
//   origin → method → policy → authentication → upstream view → route → body → parsed under policy →
//   session ownership → classification → retired → catalog → rate limit → access → forward → handler.
// The caller's identity is read from the Exchange by any step that needs it (server/identify.ts), always from what
// the client sent; the upstream view only changes what the upstream will see.
// A check added later is one more step, in one place, and every endpoint whose list names it runs it.
//
// Steps run synchronously while they can: a step that has nothing to wait for returns at once, and a request that
// waits for nothing costs no promise until its handler's.
import type { Exchange } from "./exchange.js";

/** What a step says: undefined (go on), or the answer to send; a promise of either when it must wait. */
export type StepOutcome = Response | undefined | Promise<Response | undefined>;

/** One step, named for logs and for the architecture page. */
export interface Step {
  readonly name: string;
  run(ex: Exchange): StepOutcome;
}

export type Handler = (ex: Exchange) => Response | Promise<Response>;

/** The steps in order, then the handler: one function to serve a request with. */
export function pipeline(steps: readonly Step[], handler: Handler): Handler {
  const list = steps.slice();
  const from = (ex: Exchange, i: number): Response | Promise<Response> => {
    for (; i < list.length; i++) {
      const outcome = (list[i] as Step).run(ex);
      if (outcome === undefined) continue;
      if (outcome instanceof Promise) {
        const next = i + 1;
        return outcome.then((answer) => answer ?? from(ex, next));
      }
      return outcome;
    }
    return handler(ex);
  };
  return (ex) => from(ex, 0);
}

/** A step of a function. */
export function step(name: string, run: (ex: Exchange) => StepOutcome): Step {
  return { name, run };
}
