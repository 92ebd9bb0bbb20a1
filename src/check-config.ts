// `mcp-task-gateway --check`, like `nginx -t`: what a start would find wrong only once it is under way,
// checked offline. loadConfig has already validated the file, environment and flags against the schema;
// this adds what needs the file system or another layer: the task store URL, the files the config names,
// the stdio program, the policy's rules. It starts nothing: no listener, no Redis connection, no child
// process, no JWKS fetch. Each check is the code the gateway itself runs (at start, or /readyz's for the
// stdio program), so --check and the gateway refuse the same configs with the same words.
import { upstreamEntries } from "./config/upstream-set.js";
import { DEFAULT_UPSTREAM_NAME, type GatewayConfig } from "./config/schema.js";
import { readClientKey } from "./credentials/auth-server.js";
import { ConfigError } from "./config/validate.js";
import { AccessPolicy, type AccessConfig, type AccessEffect } from "./policy/access.js";
import { RateLimitRules } from "./ratelimit/rules.js";
import { TaskPolicy, type TaskRule } from "./policy/policy.js";
import { checkCommand } from "./stdio/command.js";
import { parseStoreSpec } from "./store/store-url.js";
import { readCaFile } from "./upstream/client.js";

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Each rule compiled as the start compiles it (tool globs, claim matches), one at a time so that a problem
 * names its rule: the global rules (rate limits included), then each named upstream's own (upstreams.NAME.tasks.rules, .access.rules),
 * with that upstream's threshold and default. The glob dialect (config/glob.ts) accepts every string today, so
 * this finds nothing yet; it keeps --check in step with a dialect that one day refuses a pattern.
 */
function ruleProblems(config: GatewayConfig): string[] {
  const problems: string[] = [];
  const compile = (field: string, build: () => unknown): void => {
    try {
      build();
    } catch (err) {
      problems.push(`${field}: ${messageOf(err)}`);
    }
  };
  const t = config.tasks;
  const defaults = {
    thresholdMs: t.thresholdMs,
    ttlMs: t.defaultTtlMs,
    maxTtlMs: t.maxTtlMs,
    pollIntervalMs: t.pollIntervalMs,
  };
  const compileRules = (
    field: string,
    tasks: { thresholdMs: number; rules: readonly TaskRule[] },
    access: { default: AccessEffect; rules: AccessConfig["rules"] },
  ): void => {
    const own = { ...defaults, thresholdMs: tasks.thresholdMs };
    tasks.rules.forEach((rule, i) => compile(`${field}tasks.rules.${i}`, () => new TaskPolicy([rule], own)));
    access.rules.forEach((rule, i) =>
      compile(`${field}access.rules.${i}`, () => new AccessPolicy({ default: access.default, rules: [rule] })),
    );
  };
  compileRules("", t, config.access);
  const { onStoreDown } = config.limits;
  config.limits.rules.forEach((rule, i) =>
    compile(
      `limits.rules.${i}`,
      () => new RateLimitRules({ rules: [{ ...rule, upstream: undefined }], onStoreDown }, DEFAULT_UPSTREAM_NAME),
    ),
  );
  for (const { field, own } of upstreamEntries(config)) {
    if (own === undefined) continue;
    compileRules(
      `${field}.`,
      { thresholdMs: own.tasks?.thresholdMs ?? t.thresholdMs, rules: own.tasks?.rules ?? [] },
      { default: own.access?.default ?? config.access.default, rules: own.access?.rules ?? [] },
    );
  }
  return problems;
}

/**
 * The problems a start of this (schema-valid) config would run into, one line each naming its field; none
 * when it would start. `env` is the gateway's environment: the stdio program is looked up on the PATH its
 * child would get from it.
 */
export async function checkConfig(config: GatewayConfig, env: NodeJS.ProcessEnv): Promise<string[]> {
  const problems: string[] = [];
  try {
    parseStoreSpec(config.tasks.store);
  } catch (err) {
    // The message shows the URL with its password as ***.
    problems.push(`tasks.store: ${messageOf(err)}`);
  }
  for (const { field, upstream } of upstreamEntries(config)) {
    const { caFile, command } = upstream;
    if (caFile !== undefined) {
      try {
        readCaFile(caFile);
      } catch (err) {
        // Already "upstream.caFile FILE cannot be read (ENOENT)", as a start says it.
        const said = err instanceof ConfigError ? err.problems : [messageOf(err)];
        problems.push(...said.map((p) => (field === "upstream" ? p : p.replace(/^upstream\./, `${field}.`))));
      }
    }
    if (upstream.oauth !== undefined) {
      // What the start would refuse: a signing key that cannot be read. Nothing is sent to the server.
      try {
        readClientKey(upstream.oauth);
      } catch (err) {
        problems.push(`${field}.oauth.${messageOf(err)}`);
      }
    }
    if (command !== undefined) {
      // The /readyz check: the working directory, then the program as spawn would find it. Nothing is run.
      const check = await checkCommand(command, upstream, env);
      if (!check.ok) problems.push(`${field}.command: cannot be started (${check.cause ?? "unknown cause"})`);
    }
  }
  problems.push(...ruleProblems(config));
  return problems;
}
