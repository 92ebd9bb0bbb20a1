// What most tests of gateway processes sharing Redis start and stop the same way: the shared test Redis (each
// test takes a fresh key prefix from it), an SDK 1.x upstream, and the replica processes the tests start, killed
// after each test and cleaned up after the file.
import { afterAll, afterEach, beforeAll } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { testRedis, type TestRedis } from "./redis.js";
import { Replicas } from "./replicas.js";

export interface ReplicaSuite {
  readonly replicas: Replicas;
  readonly redis: TestRedis;
  readonly upstream: SdkUpstream;
}

/** Registers the file's hooks; the fields are there once beforeAll ran. */
export function replicaSuite(): ReplicaSuite {
  const replicas = new Replicas();
  let redis: TestRedis | undefined;
  let upstream: SdkUpstream | undefined;
  beforeAll(async () => {
    redis = await testRedis();
    upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  });
  afterEach(async () => {
    await replicas.killAll();
  });
  afterAll(async () => {
    await replicas.cleanup();
    await upstream?.close();
    await redis?.cleanup();
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not started (replicaSuite's beforeAll has not run)`);
    return value;
  };
  return {
    replicas,
    get redis() {
      return ready(redis, "the test Redis");
    },
    get upstream() {
      return ready(upstream, "the upstream");
    },
  };
}
