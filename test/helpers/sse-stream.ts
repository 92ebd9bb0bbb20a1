// A streamed answer (subscriptions/listen, a long call) read as it arrives: its
// messages collected in order, with waitFor() for the first that matches. A plain
// JSON answer (an error before any stream) counts as one message.
import { sseMessages } from "./compare.js";
import { isRecord } from "./http.js";

type Json = Record<string, unknown>;

export class SseStream {
  readonly messages: Json[] = [];
  readonly ended: Promise<void>;
  status = 0;
  contentType: string | null = null;
  private readonly controller = new AbortController();
  private readonly waiters = new Set<() => void>();

  /** `start` sends the request; the signal it is given aborts it on close(). */
  constructor(start: (signal: AbortSignal) => Promise<Response>) {
    this.ended = this.pump(Promise.resolve().then(() => start(this.controller.signal)));
  }

  private async pump(res: Promise<Response>): Promise<void> {
    try {
      const r = await res;
      this.status = r.status;
      this.contentType = r.headers.get("content-type");
      if (!r.body) return;
      const decoder = new TextDecoder();
      let buf = "";
      for await (const chunk of r.body as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        const blocks = buf.split(/\r?\n\r?\n/);
        buf = blocks.pop() ?? "";
        this.take(blocks.join("\n\n") + "\n\n");
      }
      this.take(buf);
    } catch {
      // Aborted by close(), or the server ended the stream.
    } finally {
      this.notify();
    }
  }

  private take(text: string): void {
    const trimmed = text.trim();
    if (trimmed.startsWith("{")) {
      const parsed: unknown = JSON.parse(trimmed);
      if (isRecord(parsed)) this.messages.push(parsed);
    } else {
      for (const m of sseMessages(text)) if (isRecord(m)) this.messages.push(m);
    }
    this.notify();
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** The first message (already received or future) that matches, within `timeoutMs`. */
  async waitFor(match: (m: Json) => boolean, what: string, timeoutMs = 10_000): Promise<Json> {
    const hit = this.messages.find(match);
    if (hit) return hit;
    return await new Promise<Json>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages)}`));
      }, timeoutMs);
      const check = (): void => {
        const m = this.messages.find(match);
        if (!m) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(m);
      };
      this.waiters.add(check);
    });
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.ended;
  }
}
