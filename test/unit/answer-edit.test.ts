// Editing one JSON-RPC answer inside a JSON or SSE body (src/protocol/answer-edit.ts).
import { describe, expect, it } from "vitest";
import { editAnswerBody, sseAnswerComplete, type ResultEdit } from "../../src/protocol/answer-edit.js";

const dropB: ResultEdit = (r) => ({ ...r, tools: (r.tools as Array<{ name: string }>).filter((t) => t.name !== "b") });
const answer = (id: number) => ({ jsonrpc: "2.0", id, result: { tools: [{ name: "a" }, { name: "b" }] } });

describe("editAnswerBody", () => {
  it("edits the answer to the request in a JSON body", () => {
    const out = editAnswerBody(JSON.stringify(answer(7)), "application/json", 7, dropB);
    expect(JSON.parse(out)).toEqual({ jsonrpc: "2.0", id: 7, result: { tools: [{ name: "a" }] } });
  });

  it("leaves another id's answer, errors and non-JSON alone", () => {
    const other = JSON.stringify(answer(8));
    expect(editAnswerBody(other, "application/json", 7, dropB)).toBe(other);
    const error = JSON.stringify({ jsonrpc: "2.0", id: 7, error: { code: -32603, message: "x" } });
    expect(editAnswerBody(error, "application/json; charset=utf-8", 7, dropB)).toBe(error);
    expect(editAnswerBody("not json", "application/json", 7, dropB)).toBe("not json");
    expect(editAnswerBody("<html>", "text/html", 7, dropB)).toBe("<html>");
  });

  it("in an SSE body, rewrites only the answer's event and keeps ids, notifications and comments", () => {
    const progress = { jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1 } };
    const body = [
      ": keepalive",
      "",
      "id: e1",
      `data: ${JSON.stringify(progress)}`,
      "",
      "event: message",
      "id: e2",
      `data: ${JSON.stringify(answer(3))}`,
      "",
      "",
    ].join("\n");
    const out = editAnswerBody(body, "text/event-stream", 3, dropB);
    const lines = out.split("\n");
    expect(lines.slice(0, 5)).toEqual([": keepalive", "", "id: e1", `data: ${JSON.stringify(progress)}`, ""]);
    expect(lines[5]).toBe("event: message");
    expect(lines[6]).toBe("id: e2");
    expect(JSON.parse(lines[7]!.slice(6))).toEqual({ jsonrpc: "2.0", id: 3, result: { tools: [{ name: "a" }] } });
    expect(out.endsWith("\n\n")).toBe(true);
  });

  it("joins a message split over several data lines, and accepts CRLF", () => {
    const json = JSON.stringify(answer(1), null, 1).split("\n");
    const body = `${json.map((l) => `data: ${l}`).join("\r\n")}\r\n\r\n`;
    const out = editAnswerBody(body, "text/event-stream", 1, dropB);
    const data = out.split("\n").filter((l) => l.startsWith("data:"));
    expect(data).toHaveLength(1);
    expect(JSON.parse(data[0]!.slice(6)).result.tools).toEqual([{ name: "a" }]);
  });

  it("edits the matching member of a JSON batch answer", () => {
    const out = editAnswerBody(JSON.stringify([answer(1), answer(2)]), "application/json", 2, dropB);
    const parsed = JSON.parse(out) as Array<{ result: { tools: unknown[] } }>;
    expect(parsed[0]!.result.tools).toHaveLength(2);
    expect(parsed[1]!.result.tools).toEqual([{ name: "a" }]);
  });
});

describe("sseAnswerComplete", () => {
  it("is true only once the event carrying the answer has ended", () => {
    const data = `data: ${JSON.stringify(answer(5))}`;
    expect(sseAnswerComplete(`id: 1\n${data}`, 5)).toBe(false);
    expect(sseAnswerComplete(`id: 1\n${data}\n\n`, 5)).toBe(true);
    expect(sseAnswerComplete(`${data}\r\n\r\n: keepalive\r\n\r\n`, 5)).toBe(true);
    expect(sseAnswerComplete(`${data}\n\n`, 6)).toBe(false);
    expect(
      sseAnswerComplete(`data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\ndata: not json\n\n`, 5),
    ).toBe(false);
  });
});
