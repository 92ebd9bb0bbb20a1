// A federated member that answers a list after federation.listTimeoutMs is aborted (issue 34, finding 5): the list
// is answered from the members in time, and the late member's upstream request is cancelled at once (its
// connection closed), not left running and read to its end (up to 16 MiB per late member and per list).
// Only a scripted upstream can be late on purpose and tell when its request was abandoned.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { modernRpc } from "../helpers/modern-rpc.js";
import { startScriptedUpstream, type ScriptedUpstream } from "../helpers/scripted-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";

const LIST_TIMEOUT_MS = 300;

let fast: SdkUpstream;
let slow: ScriptedUpstream;
let gateway: TestGateway;
/** Releases the slow member's held answers (the test's end). */
const held: Array<() => void> = [];

beforeAll(async () => {
  fast = await startSdkUpstream();
  // A legacy upstream that answers initialize at once and holds every tools/list until released.
  slow = await startScriptedUpstream((_req, res, recorded) => {
    if (recorded.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const m = JSON.parse(recorded.body) as { id?: number; method?: string };
    const answer = (result: unknown) => {
      if (res.destroyed) return;
      res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "slow-session" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }));
    };
    if (m.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (m.method === "initialize")
      return answer({
        protocolVersion: "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "slow", version: "1" },
      });
    if (m.method === "tools/list") {
      held.push(() => answer({ tools: [{ name: "late", inputSchema: { type: "object" } }] }));
      return;
    }
    answer({});
  });
  gateway = await startManyGateway({
    upstreams: { fast: { url: fast.url }, slow: { url: slow.url, era: "legacy" } },
    federated: { both: { upstreams: ["fast", "slow"] } },
    federation: { listTimeoutMs: LIST_TIMEOUT_MS },
  });
});

afterAll(async () => {
  for (const release of held.splice(0)) release();
  await gateway?.close(0);
  await fast?.close();
  await slow?.close();
});

describe("a federated member past the list deadline", () => {
  it("is left out of the list, and its upstream request is aborted rather than read to its end", async () => {
    const listed = await modernRpc(`${gateway.url}/both`, "tools/list", {});
    expect(listed.status).toBe(200);
    const names = ((listed.body.result as { tools?: Array<{ name: string }> } | undefined)?.tools ?? []).map(
      (t) => t.name,
    );
    expect(names.some((n) => n.startsWith("fast__"))).toBe(true);
    expect(names.some((n) => n.startsWith("slow__"))).toBe(false);
    // The slow member's tools/list reached it, and the gateway gave it up: its connection closed unanswered.
    const request = slow.requests.find((r) => r.body.includes('"tools/list"'));
    expect(request).toBeDefined();
    expect(await request?.closed).toEqual({ aborted: true });
  });
});
