// One loopback predicate (address/loopback.ts) for the three checks that used to disagree: replica traffic in the
// clear (config/schema.ts internalInClear), loopback Origins (protocol/origin.ts), and the operator page's clients
// (http/metrics-routes.ts). Its properties over generated hosts are in test/property/loopback.test.ts.
import { describe, expect, it } from "vitest";
import { isLoopbackHost } from "../../src/address/loopback.js";
import { internalInClear } from "../../src/config/schema.js";
import { isOriginAllowed } from "../../src/protocol/origin.js";

const LOOPBACK = [
  "localhost",
  "LOCALHOST",
  "localhost:8642",
  "localhost.",
  "app.localhost",
  "Deep.Sub.localhost:3000",
  "127.0.0.1",
  "127.0.0.1:80",
  "127.255.3.4",
  "127.0.0.0",
  "::1",
  "[::1]",
  "[::1]:8643",
  "0:0:0:0:0:0:0:1",
  "[0000:0000:0000:0000:0000:0000:0000:0001]",
  "::ffff:127.0.0.1",
  "::FFFF:127.1.2.3",
  "[::ffff:7f00:1]",
  "[::ffff:7f00:1]:8080",
  "::ffff:7fff:ffff",
  "0:0:0:0:0:ffff:127.0.0.1",
];

const NOT_LOOPBACK = [
  "",
  "localhost.evil.com",
  "localhost.evil.com:80",
  "127.0.0.1.evil.com",
  "127.0.0.1.nip.io",
  "evil-localhost",
  "notlocalhost",
  ".localhost",
  "a..localhost",
  "0.0.0.0",
  "::",
  "[::]",
  "10.0.0.1",
  "128.0.0.1",
  "126.255.255.255",
  "192.168.1.10:6274",
  "127.0.0.01",
  "127.0.0.256",
  "127.1",
  "0177.0.0.1",
  "2130706433",
  "::2",
  "::1:8080",
  "[::1]8080",
  "[::1]:99999",
  "[::1",
  "::1]",
  "::127.0.0.1",
  "::ffff:10.0.0.1",
  "[::ffff:a00:1]",
  "::fffe:127.0.0.1",
  "1::ffff:127.0.0.1",
  "fe80::1",
  "::1%lo",
  "localhost:",
  "localhost:port",
  "localhost:8080:80",
  "http://localhost",
  " localhost",
];

describe("isLoopbackHost", () => {
  it.each(LOOPBACK)("%s is loopback", (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });
  it.each(NOT_LOOPBACK)("%s is not", (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
  it("undefined (a socket without a remote address) is not", () => {
    expect(isLoopbackHost(undefined)).toBe(false);
  });
});

describe("the checks that use it agree", () => {
  /** The host as a URL's authority: an IPv6 address in brackets. */
  const authority = (host: string): string =>
    host.split(":").length > 2 && !host.startsWith("[") ? `[${host}]` : host;
  const urlHosts = [...LOOPBACK, ...NOT_LOOPBACK].filter((h) => {
    try {
      return h !== "" && new URL(`http://${authority(h)}`).host !== "";
    } catch {
      return false;
    }
  });

  it.each(urlHosts)("replica traffic to %s is in the clear exactly when it is not loopback", (host) => {
    const hostname = new URL(`http://${authority(host)}`).hostname;
    expect(internalInClear({ internalHost: host })).toBe(!isLoopbackHost(host));
    expect(internalInClear({ internalHost: "0.0.0.0", advertiseUrl: `http://${authority(host)}/` })).toBe(
      !isLoopbackHost(hostname),
    );
  });

  it.each(urlHosts)("an Origin on %s is a loopback Origin exactly when its host is loopback", (host) => {
    const origin = `http://${authority(host)}`;
    expect(isOriginAllowed(origin, { allowedOrigins: [], allowLoopbackOrigins: true })).toBe(
      isLoopbackHost(new URL(origin).hostname),
    );
  });

  it("a subdomain of localhost and an IPv4-mapped loopback address count everywhere", () => {
    expect(internalInClear({ internalHost: "replica.localhost" })).toBe(false);
    expect(internalInClear({ internalHost: "::ffff:127.0.0.1" })).toBe(false);
    expect(internalInClear({ internalHost: "0.0.0.0", advertiseUrl: "http://[::ffff:127.0.0.1]:8643" })).toBe(false);
    expect(isOriginAllowed("http://[::ffff:127.0.0.1]:6274", { allowedOrigins: [], allowLoopbackOrigins: true })).toBe(
      true,
    );
    expect(internalInClear({ internalHost: "localhost.evil.com" })).toBe(true);
  });
});
