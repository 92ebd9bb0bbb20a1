// The tasks/get floor (issue 14): the least a node:http server can do to answer
// the gateway's tasks/get load. It reads each request body, JSON.parses it,
// looks params.taskId up in a Map and writes the stored answer bytes with the
// headers the gateway sends. It validates nothing (no headers, no capability,
// no caller): whatever the gateway costs beyond this is gateway logic.
//
// The answers come from the gateway itself: once the tasks exist, the harness
// (bench/tasks/run.ts) asks the gateway for each id once and writes a file:
//   { "headers": { "content-type": "application/json", … },
//     "answers": [["<taskId>", "<the JSON text of the result member>"], …] }
// An answer is `{"jsonrpc":"2.0","id":<the request's id>,"result":<stored bytes>}`,
// the same template as the gateway's, so the two bodies are byte for byte equal.
//
// Run: node --import tsx bench/tasks/get-floor.ts --answers FILE
// Prints one JSON line `{"port":N}` on stdout once it listens on 127.0.0.1.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parseArgs } from "node:util";
import { announcePort, exitWithParent } from "../lib/child-lifetime.js";

const { values } = parseArgs({ options: { answers: { type: "string" }, port: { type: "string", default: "0" } } });
if (values.answers === undefined) throw new Error("--answers FILE is required");

interface AnswersFile {
  headers: Record<string, string>;
  answers: Array<[string, string]>;
}
const file = JSON.parse(readFileSync(values.answers, "utf8")) as AnswersFile;

const stored = new Map<string, Buffer>();
for (const [taskId, resultJson] of file.answers) stored.set(taskId, Buffer.from(resultJson));
const headers = Object.entries(file.headers).flat();
const HEAD = Buffer.from('{"jsonrpc":"2.0","id":');
const MID = Buffer.from(',"result":');
const TAIL = Buffer.from("}");

function answer(res: ServerResponse, body: Buffer): void {
  let msg: { id?: unknown; params?: { taskId?: unknown } };
  try {
    msg = JSON.parse(body.toString()) as typeof msg;
  } catch {
    res.writeHead(400).end();
    return;
  }
  const taskId = msg.params?.taskId;
  const bytes = typeof taskId === "string" ? stored.get(taskId) : undefined;
  if (bytes === undefined) {
    res.writeHead(404).end();
    return;
  }
  const out = Buffer.concat([HEAD, Buffer.from(JSON.stringify(msg.id ?? null)), MID, bytes, TAIL]);
  res.writeHead(200, [...headers, "content-length", String(out.length)]);
  res.end(out);
}

// Plain 'data' events, as bench/floor.ts reads: an async iterator costs more per request.
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.once("end", () =>
    answer(res, chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks)),
  );
});
server.on("error", (err) => {
  console.error(err);
  process.exit(1);
});
server.listen(Number(values.port), "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  announcePort(address.port);
});
exitWithParent();
