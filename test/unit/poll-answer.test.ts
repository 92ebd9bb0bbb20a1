// The lean tasks/get path's answer built from stored bytes (src/endpoints/task-poll.ts pollAnswer): byte for
// byte the answer the path built before from the stored JSON text, for every kind of id and result.
import { describe, expect, it } from "vitest";
import { pollAnswer } from "../../src/endpoints/task-poll.js";

/** The answer as the lean path wrote it before it kept stored bytes: the stored text in a template. */
const former = (id: string | number, resultJson: string): Buffer =>
  Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`, "utf8");

const RESULTS = [
  JSON.stringify({ resultType: "complete", taskId: "t", status: "completed", result: { content: [] } }),
  JSON.stringify({ resultType: "complete", statusMessage: "fini — ✓ 完了 😀", result: { text: "x".repeat(5_000) } }),
  JSON.stringify({ resultType: "complete", error: { code: -32603, message: 'quote " backslash \\ tab \t' } }),
];

const IDS: Array<string | number> = [0, 1, -1, 42.5, 2 ** 53 - 1, 1e21, "", "a", 'quo"te', "é ✓ 😀", "\u2028\n"];

describe("pollAnswer", () => {
  it("equals the former answer byte for byte, for number and string ids and any result", () => {
    for (const resultJson of RESULTS) {
      for (const id of IDS) {
        const answer = pollAnswer(id, Buffer.from(resultJson, "utf8"));
        expect(answer.equals(former(id, resultJson)), `id ${JSON.stringify(id)}`).toBe(true);
      }
    }
  });

  it("is valid JSON-RPC carrying the stored result unchanged", () => {
    const resultJson = RESULTS[1] ?? "";
    const answer = JSON.parse(pollAnswer("é", Buffer.from(resultJson)).toString("utf8")) as Record<string, unknown>;
    expect(answer).toEqual({ jsonrpc: "2.0", id: "é", result: JSON.parse(resultJson) });
  });

  it("leaves the stored bytes as they were", () => {
    const stored = Buffer.from(RESULTS[0] ?? "");
    const copy = Buffer.from(stored);
    pollAnswer(7, stored).fill(0);
    expect(stored.equals(copy)).toBe(true);
  });
});
