// Pinned definitions in Redis (store/pins.ts): per upstream, one hash of approved pins, one of pending changes,
// a seeded flag and a version counter, all under the hash tag `{<prefix>pins:<upstream>}` so each script touches
// one slot on Redis Cluster. A value is `<digest> <json of the record>`, so a script compares digests without
// decoding JSON. The set of upstreams with pins (for `pins list`) is a key of its own.
import { closeRedis, type RedisClient } from "./redis-connect.js";
import { LuaScript } from "./redis-scripts.js";
import { MAX_PENDING, MAX_PINS, type PinRecord, type PinSnapshot, type PinStore } from "./pins.js";

const DIGEST_LENGTH = "sha256:".length + 64;

/** KEYS: seeded, approved, version. ARGV: tool, value pairs. Returns 1 when it seeded. */
const SEED = new LuaScript(
  "pinsSeed",
  `
if redis.call('SETNX', KEYS[1], '1') == 0 then return 0 end
for i = 1, #ARGV, 2 do
  if redis.call('HLEN', KEYS[2]) < ${MAX_PINS} then redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
end
redis.call('INCR', KEYS[3])
return 1
`,
);

/** KEYS: pending, version. ARGV: tool, value. Returns 1 added, 0 known, -1 full. */
const ADD_PENDING = new LuaScript(
  "pinsAddPending",
  `
local had = redis.call('HGET', KEYS[1], ARGV[1])
if had and string.sub(had, 1, ${DIGEST_LENGTH}) == string.sub(ARGV[2], 1, ${DIGEST_LENGTH}) then return 0 end
if not had and redis.call('HLEN', KEYS[1]) >= ${MAX_PENDING} then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[2])
return 1
`,
);

/** KEYS: approved, pending, seeded, version. ARGV: tool, value. Returns 1 approved, 0 full. */
const APPROVE = new LuaScript(
  "pinsApprove",
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= ${MAX_PINS} then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], '1')
redis.call('INCR', KEYS[4])
return 1
`,
);

function encode(record: PinRecord): string {
  return `${record.digest} ${JSON.stringify(record)}`;
}

function decode(value: string): PinRecord | undefined {
  try {
    const parsed = JSON.parse(value.slice(value.indexOf(" ") + 1)) as PinRecord;
    return typeof parsed.digest === "string" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function records(hash: Record<string, string>): Map<string, PinRecord> {
  const out = new Map<string, PinRecord>();
  for (const [tool, value] of Object.entries(hash)) {
    const record = decode(value);
    if (record) out.set(tool, record);
  }
  return out;
}

export class RedisPinStore implements PinStore {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly ownsClient = false,
  ) {}

  private keys(upstream: string) {
    const base = `${this.prefix}pins:{${this.prefix}pins:${upstream}}:`;
    return {
      approved: `${base}approved`,
      pending: `${base}pending`,
      seeded: `${base}seeded`,
      version: `${base}version`,
    };
  }

  private get index(): string {
    return `${this.prefix}pins:upstreams`;
  }

  async version(upstream: string): Promise<string> {
    return (await this.client.get(this.keys(upstream).version)) ?? "0";
  }

  async load(upstream: string): Promise<PinSnapshot> {
    const k = this.keys(upstream);
    // The version is read first: a write between the reads gives a newer snapshot under an older version, which
    // the next check reads again, never the reverse.
    const version = (await this.client.get(k.version)) ?? "0";
    const [seeded, approved, pending] = await Promise.all([
      this.client.get(k.seeded),
      this.client.hgetall(k.approved),
      this.client.hgetall(k.pending),
    ]);
    return { version, seeded: seeded !== null, approved: records(approved), pending: records(pending) };
  }

  async seed(upstream: string, pins: ReadonlyMap<string, PinRecord>): Promise<boolean> {
    const k = this.keys(upstream);
    const args = [...pins].flatMap(([tool, record]) => [tool, encode(record)]);
    await this.client.sadd(this.index, upstream);
    return (await SEED.run(this.client, [k.seeded, k.approved, k.version], args)) === 1;
  }

  async addPending(upstream: string, tool: string, record: PinRecord): Promise<"added" | "known" | "full"> {
    const k = this.keys(upstream);
    await this.client.sadd(this.index, upstream);
    const out = await ADD_PENDING.run(this.client, [k.pending, k.version], [tool, encode(record)]);
    return out === 1 ? "added" : out === 0 ? "known" : "full";
  }

  async approve(upstream: string, tool: string, record: PinRecord): Promise<boolean> {
    const k = this.keys(upstream);
    await this.client.sadd(this.index, upstream);
    return (await APPROVE.run(this.client, [k.approved, k.pending, k.seeded, k.version], [tool, encode(record)])) === 1;
  }

  async upstreams(): Promise<string[]> {
    return (await this.client.smembers(this.index)).sort();
  }

  async close(): Promise<void> {
    if (this.ownsClient) await closeRedis(this.client);
  }
}
