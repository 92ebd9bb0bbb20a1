// One forwarded-session measurement (lib/forwarded-session.ts) as a JSON line, for A/B runs that alternate two
// trees (forwarded-ab.sh): `node --import tsx bench/investigations/forwarded-once.ts [requests] [unix|tcp]`.
import { forwardedSession } from "../lib/forwarded-session.js";

const requests = Number(process.argv[2] ?? 400);
const transport = process.argv[3] === "tcp" ? "tcp" : "unix";
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const f = await forwardedSession({ redisUrl, requests, transport });
console.log(JSON.stringify({ transport, ...f }));
