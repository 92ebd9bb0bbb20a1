// The SSE events of one stdio session, kept for Last-Event-ID resumption within
// a byte budget (upstream.replayBytes): the oldest go first. An event id names
// its stream ("<seq>:<streamId>"), so a client that resumes after its last seen
// event was evicted still gets the rest of that stream.
import type { EventStore } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

interface StoredEvent {
  seq: number;
  streamId: string;
  message: JSONRPCMessage;
  bytes: number;
}

export class BoundedEventStore implements EventStore {
  /** Evicted events (before head) are undefined: their messages are released at once, not at compaction. */
  private readonly events: (StoredEvent | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  private seq = 0;

  constructor(private readonly maxBytes: number) {}

  storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const seq = ++this.seq;
    // Priming events are empty objects; a real message is counted by its JSON size.
    const bytes = Object.keys(message).length === 0 ? 16 : JSON.stringify(message).length + streamId.length + 32;
    this.events.push({ seq, streamId, message, bytes });
    this.bytes += bytes;
    while (this.bytes > this.maxBytes && this.head < this.events.length - 1) {
      this.bytes -= (this.events[this.head] as StoredEvent).bytes;
      this.events[this.head] = undefined;
      this.head++;
    }
    // Compact once the evicted prefix is large.
    if (this.head > 1_024 && this.head * 2 > this.events.length) {
      this.events.splice(0, this.head);
      this.head = 0;
    }
    return Promise.resolve(`${seq}:${streamId}`);
  }

  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return Promise.resolve(parse(eventId)?.streamId);
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const last = parse(lastEventId);
    if (!last) throw new Error(`unknown event id ${JSON.stringify(lastEventId)}`);
    // A snapshot: events stored (and evicted, or compacted away) while a send awaits do not move this loop.
    for (const event of this.events.slice(this.head)) {
      if (event === undefined) continue;
      if (event.seq <= last.seq || event.streamId !== last.streamId) continue;
      // Priming events carry no message to replay.
      if (Object.keys(event.message).length === 0) continue;
      await send(`${event.seq}:${event.streamId}`, event.message);
    }
    return last.streamId;
  }
}

function parse(eventId: string): { seq: number; streamId: string } | undefined {
  const colon = eventId.indexOf(":");
  if (colon <= 0) return undefined;
  const seq = Number(eventId.slice(0, colon));
  const streamId = eventId.slice(colon + 1);
  return Number.isSafeInteger(seq) && streamId !== "" ? { seq, streamId } : undefined;
}
