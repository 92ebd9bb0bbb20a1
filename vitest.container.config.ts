import { defineConfig } from "vitest/config";

// The container test (test/container/), run by `npm run test:container` and .ci/run, not by `npm test`: it needs
// podman, runc and debootstrap (scripts/test-services.sh container installs them) and builds an image.
export default defineConfig({
  test: {
    include: ["test/container/**/*.test.ts"],
    environment: "node",
    testTimeout: 60_000,
    // The first run builds the base image and the image's npm layers (minutes); later runs reuse them.
    hookTimeout: 30 * 60_000,
    pool: "forks",
  },
});
