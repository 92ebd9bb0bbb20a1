// Properties of isLoopbackHost (address/loopback.ts) over generated hosts. IP addresses are judged against Node's own
// parser (net.BlockList: 127.0.0.0/8 and ::1, which also matches IPv4-mapped IPv6 addresses of 127.0.0.0/8); names
// against RFC 6761 (localhost and its subdomains, nothing that merely starts with them).
import { BlockList } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isLoopbackHost } from "../../src/address/loopback.js";

const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

const port = fc.integer({ min: 0, max: 65_535 }).map((p) => `:${p}`);
const maybePort = fc.option(port, { nil: "" });
const byte = fc.integer({ min: 0, max: 255 });
const hex = (n: number): string => n.toString(16);

/** A host name's labels, not ending in "localhost". */
const domain = fc.domain().filter((d) => !/(^|\.)localhost$/i.test(d));

/** Loopback names and addresses, as a URL or a socket would show them. */
const loopbackHost = fc.oneof(
  fc.constant("localhost"),
  domain.map((d) => `${d}.localhost`),
  fc.tuple(byte, byte, byte).map(([a, b, c]) => `127.${a}.${b}.${c}`),
  fc.constantFrom("::1", "0:0:0:0:0:0:0:1", "0000:0000:0000:0000:0000:0000:0000:0001"),
  fc.tuple(byte, byte, byte).map(([a, b, c]) => `::ffff:127.${a}.${b}.${c}`),
  fc.tuple(byte, fc.integer({ min: 0, max: 0xffff })).map(([b, low]) => `::ffff:${hex(0x7f00 | b)}:${hex(low)}`),
);

/** With brackets around an IPv6 address, and a port that a host may carry. */
function withPort(host: string, suffix: string): string {
  return host.includes(":") ? `[${host}]${suffix}` : `${host}${suffix}`;
}

describe("isLoopbackHost (properties)", () => {
  it("an IPv4 address, with or without a port, is loopback exactly when it is in 127.0.0.0/8", () => {
    fc.assert(
      fc.property(fc.ipV4(), maybePort, (ip, suffix) => {
        expect(isLoopbackHost(`${ip}${suffix}`)).toBe(loopback.check(ip, "ipv4"));
      }),
      { numRuns: 1_000 },
    );
  });

  it("an IPv6 address, bare or in brackets with or without a port, is loopback exactly when Node says so", () => {
    const v6 = fc.oneof(
      fc.ipV6(),
      loopbackHost.filter((h) => h.includes(":")),
      fc.tuple(byte, byte, byte, byte).map(([a, b, c, d]) => `::ffff:${a}.${b}.${c}.${d}`),
    );
    fc.assert(
      fc.property(v6, maybePort, fc.boolean(), (ip, suffix, bracketed) => {
        const expected = loopback.check(ip, "ipv6");
        expect(isLoopbackHost(ip)).toBe(expected);
        if (bracketed) expect(isLoopbackHost(`[${ip}]${suffix}`)).toBe(expected);
      }),
      { numRuns: 1_000 },
    );
  });

  it("every loopback host is loopback in any case, with a port", () => {
    fc.assert(
      fc.property(fc.mixedCase(loopbackHost), maybePort, (host, suffix) => {
        expect(isLoopbackHost(withPort(host, suffix))).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  it("a name that only starts or ends like a loopback host is not loopback (localhost.evil.com, 127.0.0.1.nip.io)", () => {
    const name = fc.oneof(
      fc.constant("localhost"),
      domain.map((d) => `${d}.localhost`),
      fc.tuple(byte, byte, byte).map(([a, b, c]) => `127.${a}.${b}.${c}`),
    );
    fc.assert(
      fc.property(name, domain, maybePort, (host, d, suffix) => {
        expect(isLoopbackHost(`${host}.${d}${suffix}`)).toBe(false);
      }),
      { numRuns: 1_000 },
    );
    // Nor one that ends with "localhost" but not with the label: evil-localhost, notlocalhost.
    fc.assert(
      fc.property(domain, fc.constantFrom("", "-", "_"), maybePort, (d, join, suffix) => {
        expect(isLoopbackHost(`${d}${join}localhost${suffix}`)).toBe(false);
      }),
      { numRuns: 1_000 },
    );
  });

  it("case never changes the answer, and no input throws", () => {
    const anything = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.mixedCase(loopbackHost),
      fc.stringMatching(/^[\[\]:.0-9a-fA-FxX%lo]{0,40}$/),
    );
    fc.assert(
      fc.property(anything, (text) => {
        const answer = isLoopbackHost(text);
        expect(typeof answer).toBe("boolean");
        expect(isLoopbackHost(text.toUpperCase())).toBe(answer);
        expect(isLoopbackHost(text.toLowerCase())).toBe(answer);
      }),
      { numRuns: 2_000 },
    );
  });
});
