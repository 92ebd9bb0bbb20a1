import { connectSdkClient, type SdkClientHandle, type SdkClientOptions } from "./sdk-client.js";

const SESSION_PLACEHOLDER = "<session-id>";

/**
 * Deep-copies `value`, replacing every occurrence of each key of `replacements`
 * inside any string (object keys included) with its value. Nothing else changes.
 */
function replaceInStrings(value: unknown, replacements: ReadonlyMap<string, string>): unknown {
  const fix = (s: string): string => {
    let out = s;
    for (const [from, to] of replacements) if (from !== "") out = out.split(from).join(to);
    return out;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return fix(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, inner] of Object.entries(v)) out[fix(k)] = walk(inner);
      return out;
    }
    return v;
  };
  return walk(value);
}

export interface ScenarioOptions {
  client?: SdkClientOptions;
  /**
   * Extra, explicit normalisation for values that legitimately differ per run
   * (applied after the session id has been replaced). Keep it minimal.
   */
  normalise?: (value: unknown) => unknown;
}

/**
 * Connects an SDK client to `url`, runs `scenario`, closes the client, and returns the
 * scenario's value with the session id (the only per-connection value the transport
 * introduces) replaced by `<session-id>`.
 */
async function runSdkScenario<T>(
  url: string,
  scenario: (h: SdkClientHandle) => Promise<T>,
  opts: ScenarioOptions = {},
): Promise<unknown> {
  const h = await connectSdkClient(url, opts.client);
  const sessionId = h.sessionId();
  try {
    const value = await scenario(h);
    const replacements = new Map<string, string>();
    if (sessionId !== undefined) replacements.set(sessionId, SESSION_PLACEHOLDER);
    const normalised = replaceInStrings(value, replacements);
    return opts.normalise ? opts.normalise(normalised) : normalised;
  } finally {
    await h.close();
  }
}

export interface DirectVsGateway {
  direct: unknown;
  viaGateway: unknown;
}

/**
 * Runs the same scenario once directly against the upstream and once through the
 * gateway (sequentially, so they never interfere) and returns both normalised
 * outcomes for the caller to compare with `toEqual`.
 */
export async function directVsGateway<T>(
  urls: { direct: string; gateway: string },
  scenario: (h: SdkClientHandle) => Promise<T>,
  opts: ScenarioOptions = {},
): Promise<DirectVsGateway> {
  const direct = await runSdkScenario(urls.direct, scenario, opts);
  const viaGateway = await runSdkScenario(urls.gateway, scenario, opts);
  return { direct, viaGateway };
}

/** JSON-RPC messages carried in the `data:` fields of an SSE body (invalid JSON is kept as a string). */
export function sseMessages(text: string): unknown[] {
  const out: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, ""));
    if (data.length === 0) continue;
    const joined = data.join("\n");
    if (joined === "") continue;
    try {
      out.push(JSON.parse(joined));
    } catch {
      out.push(joined);
    }
  }
  return out;
}
