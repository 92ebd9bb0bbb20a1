import { fileURLToPath } from "node:url";

/** The repository root; children are spawned from here so `--import tsx` resolves. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const BENCH_DIR = fileURLToPath(new URL("../", import.meta.url));
export const OUT_DIR = fileURLToPath(new URL("../out/", import.meta.url));
