// Editing one JSON-RPC answer inside a complete HTTP body, JSON or SSE. Used to
// take denied tools out of a tools/list page (access rules) on every path: the
// body is rewritten message by message, everything else (other events, event
// ids, notifications, comments) goes through unchanged.
import { isRecord, type JsonObject } from "./json.js";
import type { JsonRpcId } from "./jsonrpc.js";

/** Rewrites the result of the answer to one request; returns the result to send. */
export type ResultEdit = (result: JsonObject) => JsonObject;

function editMessage(message: unknown, id: JsonRpcId, edit: ResultEdit): unknown {
  if (!isRecord(message) || message.id !== id || !isRecord(message.result)) return message;
  return { ...message, result: edit(message.result) };
}

function editJson(text: string, id: JsonRpcId, edit: ResultEdit): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  const edited = Array.isArray(parsed) ? parsed.map((m) => editMessage(m, id, edit)) : editMessage(parsed, id, edit);
  return JSON.stringify(edited);
}

/** One SSE event (its lines, without the blank line that ends it) with its data edited. */
function editEvent(lines: string[], id: JsonRpcId, edit: ResultEdit): string[] {
  const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(l.startsWith("data: ") ? 6 : 5));
  if (data.length === 0) return lines;
  const text = data.join("\n");
  const edited = editJson(text, id, edit);
  if (edited === text) return lines;
  // The edited message takes the place of the first data line; its other data lines go.
  const out: string[] = [];
  let placed = false;
  for (const line of lines) {
    if (!line.startsWith("data:")) out.push(line);
    else if (!placed) {
      out.push(`data: ${edited}`);
      placed = true;
    }
  }
  return out;
}

function editSse(text: string, id: JsonRpcId, edit: ResultEdit): string {
  const lines = text.split(/\r\n|\r|\n/);
  const out: string[] = [];
  let event: string[] = [];
  for (const line of lines) {
    if (line === "") {
      out.push(...editEvent(event, id, edit), "");
      event = [];
    } else event.push(line);
  }
  // An unterminated last event (a stream cut short) is passed on as it came.
  out.push(...event);
  return out.join("\n");
}

/** The body with the answer to `id` edited; anything that is not that answer stays byte for byte. */
export function editAnswerBody(text: string, contentType: string | undefined, id: JsonRpcId, edit: ResultEdit): string {
  const type = (contentType ?? "").toLowerCase();
  if (type.startsWith("text/event-stream")) return editSse(text, id, edit);
  if (type.includes("json")) return editJson(text, id, edit);
  return text;
}

/**
 * True once an SSE body holds a complete event with the answer to `id`: an
 * upstream may keep a POST's stream open after answering, and a reader that
 * waits for the end would wait forever. JSON bodies end with their message.
 */
export function sseAnswerComplete(text: string, id: JsonRpcId): boolean {
  const events = text.split(/\r\n\r\n|\n\n|\r\r/);
  // The last piece is an event still being received (or empty after a final blank line).
  for (const event of events.slice(0, -1)) {
    const data = event
      .split(/\r\n|\r|\n/)
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(l.startsWith("data: ") ? 6 : 5))
      .join("\n");
    if (data === "") continue;
    try {
      const message: unknown = JSON.parse(data);
      if (isRecord(message) && message.id === id && ("result" in message || "error" in message)) return true;
    } catch {
      // Not JSON: not the answer.
    }
  }
  return false;
}

/** The answer to `id` in a JSON or SSE body (a message with its result or error), or undefined when none is there. */
export function answerIn(text: string, contentType: string | undefined, id: JsonRpcId): JsonObject | undefined {
  let found: JsonObject | undefined;
  const find = (message: unknown): void => {
    if (!found && isRecord(message) && message.id === id && ("result" in message || "error" in message))
      found = message;
  };
  const fromJson = (json: string): void => {
    try {
      const parsed: unknown = JSON.parse(json);
      if (Array.isArray(parsed)) parsed.forEach(find);
      else find(parsed);
    } catch {
      // Not JSON: no answer in it.
    }
  };
  const type = (contentType ?? "").toLowerCase();
  if (!type.startsWith("text/event-stream")) {
    fromJson(text);
    return found;
  }
  for (const event of text.split(/\r\n\r\n|\n\n|\r\r/)) {
    const data = event
      .split(/\r\n|\r|\n/)
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(l.startsWith("data: ") ? 6 : 5))
      .join("\n");
    if (data !== "") fromJson(data);
    if (found) break;
  }
  return found;
}
