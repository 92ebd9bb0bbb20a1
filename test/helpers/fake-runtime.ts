// A TaskRuntime for engine tests that runs nothing upstream: it records the
// answers the engine hands it (tasks/update) and the reasons it is cancelled.
import type { TaskRuntime } from "../../src/tasks/task-runtime.js";

export interface FakeRuntime extends TaskRuntime {
  answers: Array<[string, unknown]>;
  cancels: string[];
}

export function fakeRuntime(): FakeRuntime {
  const answers: Array<[string, unknown]> = [];
  const cancels: string[] = [];
  return {
    answers,
    cancels,
    answer: (key, value) => {
      answers.push([key, value]);
      return Promise.resolve();
    },
    cancel: (reason) => {
      cancels.push(reason);
    },
  };
}
