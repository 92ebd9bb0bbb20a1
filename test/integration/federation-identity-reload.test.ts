// tasks.identityHeader is a live setting: a reload that sets it applies to every request after it. On a federated
// endpoint that existed before the reload, an SDK 1.x client's session (the gateway's, whose requests reach the
// member routes over loopback carrying the caller's credential headers) must carry the new identity header too,
// as a 2.x client's requests do: otherwise every member route refuses the session's requests (-32600, the
// header that identifies the caller is missing) although the client sends it. A session opened before the reload
// was bound to its caller as named then, and is unknown afterwards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { manyConfig, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool } from "../helpers/modern-rpc.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";

let one: SdkUpstream;
let gateway: TestGateway;

const config = (tasks: GatewayConfigInput["tasks"] = {}): GatewayConfigInput => ({
  upstreams: { one: { url: one.url } },
  federated: { fed: { upstreams: ["one"] } },
  tasks,
});

beforeAll(async () => {
  one = await startSdkUpstream();
  gateway = await startManyGateway(config());
});

afterAll(async () => {
  await gateway?.close(0);
  await one?.close();
});

const fed = (): string => routeOf(gateway, "fed");

async function echo(h: SdkClientHandle, text: string): Promise<string> {
  const res = (await h.client.callTool({ name: "one__echo", arguments: { text } })) as CallToolResult;
  return res.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe("tasks.identityHeader set by a reload, on a federated endpoint", () => {
  it("applies to SDK 1.x sessions as to 2.x requests: a session opened after it is served", async () => {
    const earlier = await connectSdkClient(fed(), { headers: { "x-user": "alice" } });
    try {
      expect(await echo(earlier, "before")).toBe("before");

      gateway.reload(manyConfig(config({ identityHeader: "x-user" })));

      // The reference: a 2.x client's request names its caller with the header, and is served.
      const modern = await callTool(fed(), "one__echo", { text: "modern" }, { headers: { "x-user": "bob" } });
      expect(modern.body.result, modern.text).toMatchObject({ content: [{ type: "text", text: "modern" }] });
      // And without it, refused: the setting is in force on the member route.
      const anonymous = await callTool(fed(), "one__echo", { text: "nobody" });
      expect(anonymous.body.error?.code, anonymous.text).toBe(-32600);

      const later = await connectSdkClient(fed(), { headers: { "x-user": "carol" } });
      try {
        expect(await echo(later, "after")).toBe("after");
      } finally {
        await later.close();
      }
      // A session opened before is bound to its caller as named then (no identity header): it is not this caller
      // any more, so it is unknown (404, as on a route in front of a modern-only upstream), and the client starts
      // a new one.
      await expect(echo(earlier, "stale")).rejects.toThrow(/session_not_found/);
    } finally {
      await earlier.close();
    }
  });
});
