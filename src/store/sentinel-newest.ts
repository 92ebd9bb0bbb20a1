// Which Sentinel a client should believe. After a failover the Sentinels learn the new primary one by one (the
// leader at once, the others from its hello messages, up to a couple of seconds later), and a restarted old
// primary answers as an empty primary until a Sentinel turns it into a replica. ioredis asks the Sentinels in
// turn and trusts the first that answers, so a client reconnecting in that window can be sent to the old primary
// and acknowledge writes there that the replica's resync then erases: tasks a client was told exist, gone.
//
// Each failover raises the configuration epoch, so the Sentinel reporting the highest `config-epoch` for the
// primary knows the newest configuration. Before each (re)connection this connector asks every Sentinel it knows
// and puts that one at the head of ioredis's list; ioredis then resolves and connects as it always does (TLS,
// natMap, its failover detector and its own Sentinel discovery unchanged).
import { Redis, SentinelConnector, type SentinelConnectionOptions } from "ioredis";

type Endpoint = NonNullable<SentinelConnectionOptions["sentinels"]>[number];

/** How long one Sentinel may take to say what it knows before it is left out of the choice (ms). */
const ASK_TIMEOUT_MS = 1_000;

/** A Sentinel's `SENTINEL MASTER name` reply (a flat field/value list): its config-epoch, or undefined. */
export function configEpoch(reply: unknown): number | undefined {
  if (!Array.isArray(reply)) return undefined;
  for (let i = 0; i + 1 < reply.length; i += 2) {
    if (String(reply[i]) !== "config-epoch") continue;
    const epoch = Number(String(reply[i + 1]));
    return Number.isSafeInteger(epoch) ? epoch : undefined;
  }
  return undefined;
}

/** The index of the newest answer (highest epoch; the first of equals), or -1 when none answered. */
export function newestIndex(epochs: ReadonlyArray<number | undefined>): number {
  let best = -1;
  epochs.forEach((epoch, i) => {
    if (epoch === undefined) return;
    const current = best < 0 ? undefined : epochs[best];
    if (current === undefined || epoch > current) best = i;
  });
  return best;
}

export class NewestSentinelConnector extends SentinelConnector {
  // ioredis builds a custom Connector from its whole options object (typed unknown there).
  constructor(options: unknown) {
    super(options as SentinelConnectionOptions);
  }

  override async connect(...args: Parameters<SentinelConnector["connect"]>): ReturnType<SentinelConnector["connect"]> {
    await this.preferNewest().catch(() => undefined);
    return super.connect(...args);
  }

  /** Moves the Sentinel with the newest configuration to the head of the list ioredis walks. */
  private async preferNewest(): Promise<void> {
    const iterator = this.sentinelIterator;
    const known: Endpoint[] = [];
    iterator.reset(false);
    for (let next = iterator.next(); !next.done; next = iterator.next()) known.push(next.value);
    iterator.reset(false);
    if (known.length < 2) return;
    const epochs = await Promise.all(known.map((endpoint) => this.epochOf(endpoint)));
    const best = newestIndex(epochs);
    if (best <= 0 || epochs[best] === epochs[0]) return;
    // reset(true) rotates the list so that the endpoint last returned by next() comes first.
    for (let i = 0; i <= best; i++) iterator.next();
    iterator.reset(true);
  }

  private async epochOf(endpoint: Endpoint): Promise<number | undefined> {
    const o = this.options;
    const client = new Redis({
      host: endpoint.host ?? "127.0.0.1",
      port: endpoint.port ?? 26379,
      ...(endpoint.family !== undefined && { family: endpoint.family }),
      ...(o.sentinelUsername !== undefined && { username: o.sentinelUsername }),
      ...(o.sentinelPassword !== undefined && { password: o.sentinelPassword }),
      ...(o.sentinelTLS !== undefined && { tls: o.sentinelTLS }),
      connectTimeout: ASK_TIMEOUT_MS,
      commandTimeout: ASK_TIMEOUT_MS,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableReadyCheck: false,
    });
    client.on("error", () => undefined);
    try {
      return configEpoch(await client.call("SENTINEL", "MASTER", o.name ?? "mymaster"));
    } catch {
      return undefined;
    } finally {
      client.disconnect();
    }
  }
}
