// upstream.caFile is read when the upstream client is built (at start): a file that cannot be read,
// or holds no certificate, stops the start with a message naming the setting.
import { singleUpstream } from "../../src/config/upstream-set.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/validate.js";
import { UpstreamClient } from "../../src/upstream/client.js";

const dir = mkdtempSync(join(tmpdir(), "gateway-cafile-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const upstreamOf = (upstream: Record<string, unknown>) =>
  singleUpstream(parseConfig({ upstream: { url: "https://mcp.example.com/mcp", ...upstream } }));

describe("UpstreamClient with upstream.caFile", () => {
  it("names the file and the reason when it cannot be read", () => {
    const missing = join(dir, "missing.pem");
    expect(() => new UpstreamClient(upstreamOf({ caFile: missing }))).toThrow(
      `upstream.caFile ${missing} cannot be read (ENOENT)`,
    );
  });

  it("refuses a file without a PEM certificate", () => {
    const file = join(dir, "not-a-cert.pem");
    writeFileSync(file, "hello\n");
    expect(() => new UpstreamClient(upstreamOf({ caFile: file }))).toThrow(/holds no PEM certificate/);
  });

  it("builds the client (h2 or not) from a readable PEM file", async () => {
    const file = join(dir, "ca.pem");
    writeFileSync(file, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    for (const http2 of [false, true]) {
      const client = new UpstreamClient(upstreamOf({ caFile: file, http2 }));
      expect(client.displayUrl).toBe("https://mcp.example.com");
      await client.close();
    }
  });
});
