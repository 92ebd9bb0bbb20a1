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
// With --redis URL --prefix P, the floor of a gateway on a Redis store: each answer is read from the gateway's
// own task hash in Redis, with the read the gateway's store makes (redis-store.ts get: one pipeline of HMGET
// owner status json and GET of the lease), so the round trip that dominates there is in both. The answers
// file then gives the headers only.
//
// Run: node --import tsx bench/tasks/get-floor.ts --answers FILE [--redis URL --prefix P]
// Prints one JSON line `{"port":N}` on stdout once it listens on 127.0.0.1.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { redisKeys } from "../../src/store/redis-keys.js";
import { announcePort, exitWithParent } from "../lib/child-lifetime.js";

const { values } = parseArgs({
  options: {
    answers: { type: "string" },
    port: { type: "string", default: "0" },
    redis: { type: "string" },
    prefix: { type: "string", default: "" },
  },
});
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

function send(res: ServerResponse, id: unknown, bytes: Buffer | undefined): void {
  if (bytes === undefined) {
    res.writeHead(404).end();
    return;
  }
  const out = Buffer.concat([HEAD, Buffer.from(JSON.stringify(id ?? null)), MID, bytes, TAIL]);
  res.writeHead(200, [...headers, "content-length", String(out.length)]);
  res.end(out);
}

const redis = values.redis === undefined ? undefined : new Redis(values.redis, { enableReadyCheck: false });
const keys = redisKeys(values.prefix);

/** The gateway store's read of one task: its hash's owner, status and json, and its lease, in one pipeline. */
function fromRedis(client: Redis, res: ServerResponse, id: unknown, taskId: string): void {
  client
    .pipeline()
    .hmgetBuffer(keys.task(taskId), "owner", "status", "json")
    .get(keys.lease(taskId))
    .exec()
    .then((replies) => {
      const fields = replies?.[0]?.[1] as (Buffer | null)[] | undefined;
      send(res, id, fields?.[2] ?? undefined);
    })
    .catch(() => res.writeHead(503).end());
}

function answer(res: ServerResponse, body: Buffer): void {
  let msg: { id?: unknown; params?: { taskId?: unknown } };
  try {
    msg = JSON.parse(body.toString()) as typeof msg;
  } catch {
    res.writeHead(400).end();
    return;
  }
  const taskId = msg.params?.taskId;
  if (typeof taskId !== "string") {
    res.writeHead(404).end();
    return;
  }
  if (redis !== undefined) fromRedis(redis, res, msg.id, taskId);
  else send(res, msg.id, stored.get(taskId));
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
