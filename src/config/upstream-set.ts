// The upstreams a config names, as one list: the single `upstream` (called default, served at server.path) and
// each entry of `upstreams` (served at <server.path>/<name>). Everything that is per upstream (routes, policy,
// probes, labels, --check) walks this list, so the two ways of naming an upstream never drift apart.
import { DEFAULT_UPSTREAM_NAME, type GatewayConfig, type NamedUpstreamConfig, type UpstreamConfig } from "./schema.js";

export interface UpstreamEntry {
  /** The configured name: the key in `upstreams`, or default for the single `upstream`. */
  readonly name: string;
  /** Where it is served: server.path for the single upstream, <server.path>/<name> for a named one. */
  readonly path: string;
  /** The config field it comes from, for messages: "upstream" or "upstreams.<name>". */
  readonly field: string;
  readonly upstream: UpstreamConfig;
  /** A named upstream's own policy and credentials (checked before the global ones); undefined for the single one. */
  readonly own:
    Pick<NamedUpstreamConfig, "tasks" | "access" | "auth" | "tools" | "prompts" | "validateArguments"> | undefined;
}

/** `<server.path>/<name>`, with one slash between them whatever server.path ends with. */
export function namedUpstreamPath(serverPath: string, name: string): string {
  return `${serverPath.endsWith("/") ? serverPath.slice(0, -1) : serverPath}/${name}`;
}

/** Every upstream of the config: the single one first (when given), then the named ones in the config's order. */
export function upstreamEntries(config: Pick<GatewayConfig, "upstream" | "upstreams" | "server">): UpstreamEntry[] {
  const entries: UpstreamEntry[] = [];
  if (config.upstream)
    entries.push({
      name: DEFAULT_UPSTREAM_NAME,
      path: config.server.path,
      field: "upstream",
      upstream: config.upstream,
      own: undefined,
    });
  for (const [name, block] of Object.entries(config.upstreams)) {
    // The catalog (tools, prompts, validateArguments) is policy: a reload that changes it keeps the route.
    const { tasks, access, auth, tools, prompts, validateArguments, ...upstream } = block;
    entries.push({
      name,
      path: namedUpstreamPath(config.server.path, name),
      field: `upstreams.${name}`,
      upstream,
      own: { tasks, access, auth, tools, prompts, validateArguments },
    });
  }
  return entries;
}

/** The single `upstream` of a config that must have one (tests and embedders that build one upstream's parts). */
export function singleUpstream(config: Pick<GatewayConfig, "upstream">): UpstreamConfig {
  if (!config.upstream) throw new Error("this config has no single upstream (only upstreams)");
  return config.upstream;
}
