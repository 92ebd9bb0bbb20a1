// Per-tool task policy: the first rule whose glob matches the tool name decides.
//   auto     race the upstream against thresholdMs; a task only if it runs longer
//   always   a task at once
//   never    plain pass-through, never a task
//   required a task; a client that does not declare the extension gets -32021
export type TaskMode = "auto" | "always" | "never" | "required";

export interface TaskRule {
  /** Glob over tool names: `*` any run of characters, `?` one character. */
  tool: string;
  mode: TaskMode;
  thresholdMs?: number | undefined;
  ttlMs?: number | undefined;
  pollIntervalMs?: number | undefined;
}

export interface Decision {
  mode: TaskMode;
  thresholdMs: number;
  ttlMs: number;
  pollIntervalMs: number;
}

export interface PolicyDefaults {
  thresholdMs: number;
  ttlMs: number;
  maxTtlMs: number;
  pollIntervalMs: number;
}

export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${body}$`, "s");
}

export class TaskPolicy {
  private readonly compiled: Array<{ re: RegExp; rule: TaskRule }>;

  constructor(
    rules: readonly TaskRule[],
    private readonly defaults: PolicyDefaults,
  ) {
    this.compiled = rules.map((rule) => ({ re: globToRegExp(rule.tool), rule }));
  }

  decide(toolName: string): Decision {
    const rule = this.compiled.find((c) => c.re.test(toolName))?.rule;
    const d = this.defaults;
    return {
      mode: rule?.mode ?? "auto",
      thresholdMs: rule?.thresholdMs ?? d.thresholdMs,
      // A rule may ask for a longer TTL than the default, never past the ceiling.
      ttlMs: Math.min(rule?.ttlMs ?? d.ttlMs, d.maxTtlMs),
      pollIntervalMs: rule?.pollIntervalMs ?? d.pollIntervalMs,
    };
  }
}
