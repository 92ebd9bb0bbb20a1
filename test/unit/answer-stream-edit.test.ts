// The streaming answer edit: SSE events pass on as they complete (a progress event is readable before the
// answer exists), only the answer to the request is edited, and events cut across chunks are put together.
import { describe, expect, it } from "vitest";
import { editAnswerStream } from "../../src/federated/answer-stream-edit.js";

const sse = { "content-type": "text/event-stream" };
const progress = `data: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1 } })}\n\n`;
const answer = `id: 7\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { taskId: "raw" } })}\n\n`;
const seal = (r: Record<string, unknown>) => ({ ...r, taskId: `sealed-${String(r["taskId"])}` });

describe("editAnswerStream", () => {
  it("passes an event on before the stream ends, and edits the answer when it comes", async () => {
    let push!: (s: string) => void;
    let end!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (s) => controller.enqueue(new TextEncoder().encode(s));
        end = () => controller.close();
      },
    });
    const res = await editAnswerStream(new Response(body, { headers: sse }), 1, seal, 1024);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    push(progress);
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe(progress);
    // The answer in three pieces, cut inside its data line.
    push(answer.slice(0, 10));
    push(answer.slice(10, 40));
    push(answer.slice(40));
    end();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toContain('"taskId":"sealed-raw"');
    expect(rest).toContain("id: 7");
    expect(rest).not.toContain('"taskId":"raw"');
  });

  it("edits a JSON answer, and leaves other requests' answers alone", async () => {
    const json = { "content-type": "application/json" };
    const mine = await editAnswerStream(
      new Response(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { taskId: "raw" } }), { headers: json }),
      1,
      seal,
      1024,
    );
    expect(await mine.json()).toEqual({ jsonrpc: "2.0", id: 1, result: { taskId: "sealed-raw" } });
    const other = await editAnswerStream(new Response(answer, { headers: sse }), 2, seal, 1024);
    expect(await other.text()).toBe(answer);
  });
});
