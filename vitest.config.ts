import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The container test builds an image with podman: `npm run test:container` (vitest.container.config.ts).
    exclude: [...configDefaults.exclude, "test/container/**"],
    environment: "node",
    // One check of Redis and Chromium before any file runs (scripts/test-services.sh).
    globalSetup: ["test/setup/services.ts"],
    // Integration tests spawn real MCP servers and stream over loopback.
    testTimeout: 20_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
    // Child processes rather than worker threads: tests spawn servers and open many sockets.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
