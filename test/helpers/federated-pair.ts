// The federated endpoint most federation tests use: `pair` (at <server.path>/pair) over a legacy upstream `one`
// (the SDK 1.x demo server) and a modern upstream `two` (the SDK 2.x server), both with a tool named echo.
import type { GatewayConfigInput } from "../../src/index.js";

export function pairConfig(
  legacyUrl: string,
  modernUrl: string,
  members: string[] = ["one", "two"],
): GatewayConfigInput {
  return {
    upstreams: { one: { url: legacyUrl }, two: { url: modernUrl, era: "modern" } },
    federated: { pair: { upstreams: members } },
  };
}
