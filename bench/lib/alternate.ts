// Two paths measured in turns: each round measures both, the order swapped every round, so neither always runs
// first (a warmer JIT, a quieter moment). Used wherever a bench compares a path with the one it adds work to
// (bench/upstreams.ts, bench/federation.ts, bench/ratelimit.ts, lib/priced-paths.ts).

/** Per path, its measurements in round order. */
export async function alternate<K extends string, T>(
  paths: readonly [K, K],
  rounds: number,
  measure: (path: K, round: number) => Promise<T>,
  onRound?: (round: number) => void,
): Promise<Record<K, T[]>> {
  const [a, b] = paths;
  const out = { [a]: [] as T[], [b]: [] as T[] } as Record<K, T[]>;
  for (let round = 0; round < rounds; round++) {
    for (const path of round % 2 === 0 ? [a, b] : [b, a]) out[path].push(await measure(path, round));
    onRound?.(round);
  }
  return out;
}
