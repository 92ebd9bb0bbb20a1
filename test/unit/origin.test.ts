import { describe, expect, it } from "vitest";
import { isOriginAllowed, normalizeOrigin, type OriginPolicy } from "../../src/protocol/origin.js";

const DEFAULT: OriginPolicy = { allowedOrigins: [], allowLoopbackOrigins: true };
const NO_LOOPBACK: OriginPolicy = { allowedOrigins: [], allowLoopbackOrigins: false };

describe("isOriginAllowed", () => {
  it("allows requests without an Origin (non-browser clients), whatever the policy", () => {
    expect(isOriginAllowed(undefined, DEFAULT)).toBe(true);
    expect(isOriginAllowed(undefined, NO_LOOPBACK)).toBe(true);
  });

  it.each([
    "http://localhost",
    "http://localhost:6274",
    "https://localhost:8443",
    "http://LOCALHOST:3000",
    "http://127.0.0.1",
    "http://127.0.0.1:5173",
    "http://127.255.3.4:80",
    "http://[::1]",
    "http://[::1]:6274",
    "http://app.localhost:3000",
    "http://deep.sub.localhost",
  ])("allows the loopback origin %s by default", (origin) => {
    expect(isOriginAllowed(origin, DEFAULT)).toBe(true);
  });

  it.each([
    "http://localhost.evil.com",
    "http://localhost.evil.com:6274",
    "http://evil.com",
    "https://evil.example",
    "http://127.0.0.1.evil.com",
    "http://127.0.0.1.nip.io",
    "http://evil-localhost",
    "http://notlocalhost",
    "http://10.0.0.1",
    "http://192.168.1.10:6274",
    "http://0.0.0.0:6274",
    "http://[::2]",
    "null",
    "",
    "not a url",
    "file:///etc/passwd",
  ])("rejects %j by default", (origin) => {
    expect(isOriginAllowed(origin, DEFAULT)).toBe(false);
  });

  it("rejects loopback origins when allowLoopbackOrigins is false", () => {
    for (const origin of ["http://localhost:6274", "http://127.0.0.1", "http://[::1]:3000", "http://a.localhost"]) {
      expect(isOriginAllowed(origin, NO_LOOPBACK)).toBe(false);
    }
  });

  it("allows listed origins by exact match, and nothing else", () => {
    const policy: OriginPolicy = { allowedOrigins: ["https://app.example.com"], allowLoopbackOrigins: false };
    expect(isOriginAllowed("https://app.example.com", policy)).toBe(true);
    expect(isOriginAllowed("http://app.example.com", policy)).toBe(false);
    expect(isOriginAllowed("https://app.example.com:8443", policy)).toBe(false);
    expect(isOriginAllowed("https://evil.app.example.com", policy)).toBe(false);
    expect(isOriginAllowed("https://app.example.com.evil.com", policy)).toBe(false);
    expect(isOriginAllowed("https://example.com", policy)).toBe(false);
  });

  it("normalises both sides: trailing slash, default port, letter case", () => {
    const policy: OriginPolicy = {
      allowedOrigins: ["https://app.example.com/", "http://other.example:80", "HTTPS://Upper.Example"],
      allowLoopbackOrigins: false,
    };
    expect(isOriginAllowed("https://app.example.com", policy)).toBe(true);
    expect(isOriginAllowed("https://app.example.com:443", policy)).toBe(true);
    expect(isOriginAllowed("http://other.example", policy)).toBe(true);
    expect(isOriginAllowed("https://upper.example", policy)).toBe(true);
    expect(isOriginAllowed("http://other.example:8080", policy)).toBe(false);
  });

  it("still allows loopback besides the listed origins when allowLoopbackOrigins is true", () => {
    const policy: OriginPolicy = { allowedOrigins: ["https://app.example.com"], allowLoopbackOrigins: true };
    expect(isOriginAllowed("http://localhost:6274", policy)).toBe(true);
    expect(isOriginAllowed("https://app.example.com", policy)).toBe(true);
    expect(isOriginAllowed("https://evil.example", policy)).toBe(false);
  });

  it('"*" allows any well-formed origin, loopback or not', () => {
    const policy: OriginPolicy = { allowedOrigins: ["*"], allowLoopbackOrigins: false };
    for (const origin of ["https://anything.example", "http://localhost.evil.com", "http://localhost:1"]) {
      expect(isOriginAllowed(origin, policy)).toBe(true);
    }
  });

  it('allows the opaque origin "null" only when it is listed verbatim', () => {
    expect(isOriginAllowed("null", DEFAULT)).toBe(false);
    expect(isOriginAllowed("null", { allowedOrigins: ["null"], allowLoopbackOrigins: false })).toBe(true);
  });

  it("ignores malformed entries in allowedOrigins instead of matching them loosely", () => {
    const policy: OriginPolicy = { allowedOrigins: ["app.example.com", "not a url"], allowLoopbackOrigins: false };
    expect(isOriginAllowed("https://app.example.com", policy)).toBe(false);
    expect(isOriginAllowed("http://app.example.com", policy)).toBe(false);
  });
});

describe("normalizeOrigin", () => {
  it("reduces a URL to scheme://host[:port]", () => {
    expect(normalizeOrigin("https://App.Example.com:443/path?q=1#h")).toBe("https://app.example.com");
    expect(normalizeOrigin("http://[::1]:6274/")).toBe("http://[::1]:6274");
  });

  it("returns undefined for opaque or invalid origins", () => {
    expect(normalizeOrigin("null")).toBeUndefined();
    expect(normalizeOrigin("file:///x")).toBeUndefined();
    expect(normalizeOrigin("nope")).toBeUndefined();
  });
});
