// Pages of a federated list span the upstreams: two paginating upstreams (an SDK 1.x and an SDK 2.x server,
// three pages of tools each) behind one federated endpoint; following nextCursor yields every tool of both,
// each once and prefixed, and a cursor the endpoint did not give is refused.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startLegacyPagedUpstream,
  startModernPagedUpstream,
  TOOL_PAGES,
  type PagedUpstream,
} from "../helpers/paged-upstreams.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { modernRpc } from "../helpers/modern-rpc.js";
import type { TestGateway } from "../helpers/gateway.js";

let legacy: PagedUpstream;
let modern: PagedUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  legacy = await startLegacyPagedUpstream();
  modern = await startModernPagedUpstream();
  gateway = await startManyGateway({
    upstreams: { old: { url: legacy.url }, new: { url: modern.url } },
    federated: { both: { upstreams: ["old", "new"] } },
  });
});

afterAll(async () => {
  await gateway?.close();
  await legacy?.close();
  await modern?.close();
});

describe("pagination across upstreams", () => {
  it("following nextCursor lists every tool of both upstreams once, then ends", async () => {
    const url = `${gateway.url}/both`;
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const answer = await modernRpc(url, "tools/list", cursor === undefined ? {} : { cursor });
      const result = answer.body.result as { tools: Array<{ name: string }>; nextCursor?: string };
      expect(result, answer.text).toBeDefined();
      seen.push(...result.tools.map((t) => t.name));
      cursor = result.nextCursor;
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    const own = TOOL_PAGES.flat().map((t) => t.name);
    expect(seen.sort()).toEqual([...own.map((n) => `old__${n}`), ...own.map((n) => `new__${n}`)].sort());
    expect(pages).toBe(TOOL_PAGES.length);
  });

  it("a cursor the endpoint did not give is -32602, not a page of anything", async () => {
    const answer = await modernRpc(`${gateway.url}/both`, "tools/list", { cursor: "bm90LWEtY3Vyc29y" });
    expect(answer.body.error?.code).toBe(-32602);
  });
});
