// Whether a host is this host's loopback: one answer for every check that asks (replica traffic in the clear, the
// Origins allowLoopbackOrigins lets in, the clients the operator page answers). Pure: no DNS, no I/O. A name is
// loopback only where RFC 6761 makes it so, and an address only in its usual spelling: anything unusual is not
// loopback, which each caller takes as the careful answer.

/** Decimal 0–255 without leading zeros ("127.0.0.01" is not read: URL parsers take 01 as octal). */
function octet(text: string): number | undefined {
  if (!/^(?:0|[1-9]\d{0,2})$/.test(text)) return undefined;
  const n = Number(text);
  return n <= 255 ? n : undefined;
}

/** The four octets of a dotted-quad IPv4 address, or undefined. */
function ipv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const octets = parts.map(octet);
  return octets.every((o) => o !== undefined) ? octets : undefined;
}

/** The 16-bit groups of the textual IPv6 address (RFC 4291 2.2: "::", a dotted-quad tail), or undefined. */
function ipv6(text: string): number[] | undefined {
  if (text.length > 45) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (part: string, last: boolean): number[] | undefined => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i] as string;
      if (last && i === pieces.length - 1 && piece.includes(".")) {
        const v4 = ipv4(piece);
        if (v4 === undefined) return undefined;
        out.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
      } else if (/^[0-9a-f]{1,4}$/.test(piece)) out.push(parseInt(piece, 16));
      else return undefined;
    }
    return out;
  };
  if (halves.length === 1) {
    const groups = groupsOf(text, true);
    return groups?.length === 8 ? groups : undefined;
  }
  const head = groupsOf(halves[0] as string, false);
  const tail = groupsOf(halves[1] as string, true);
  if (head === undefined || tail === undefined || head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** ::1, or an IPv4-mapped address (::ffff:a.b.c.d) in 127.0.0.0/8. */
function isLoopbackIpv6(text: string): boolean {
  const g = ipv6(text);
  if (g === undefined || g.slice(0, 5).some((x) => x !== 0)) return false;
  if (g[5] === 0 && g[6] === 0) return g[7] === 1;
  return g[5] === 0xffff && (g[6] as number) >> 8 === 127;
}

/** localhost and its subdomains (RFC 6761 6.3), a trailing dot allowed; or an address in 127.0.0.0/8. */
function isLoopbackName(name: string): boolean {
  const v4 = ipv4(name);
  if (v4 !== undefined) return v4[0] === 127;
  const fqdn = name.endsWith(".") ? name.slice(0, -1) : name;
  if (fqdn === "localhost") return true;
  if (!fqdn.endsWith(".localhost")) return false;
  // Labels of a host name before it: "a.b.localhost", not ".localhost" or "a..localhost".
  return /^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+localhost$/.test(fqdn);
}

/** ":8080": a port after a host (0–65535). */
function isPort(text: string): boolean {
  return /^:\d{1,5}$/.test(text) && Number(text.slice(1)) <= 65_535;
}

/**
 * Whether `host` names this host's loopback: `localhost`, `*.localhost`, any address in 127.0.0.0/8, `::1`, and
 * IPv4-mapped IPv6 addresses in 127.0.0.0/8 (`::ffff:127.0.0.1`, `::ffff:7f00:1`); an IPv6 address with or without
 * brackets, any of them with a port (an IPv6 one in brackets only); any case. Everything else is not:
 * `localhost.evil.com`, `127.0.0.1.evil.com`, `0.0.0.0`, `::`, `10.0.0.1`, undefined.
 */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined || host.length > 300) return false;
  const h = host.toLowerCase();
  if (h.startsWith("[")) {
    const close = h.indexOf("]");
    if (close < 0) return false;
    const rest = h.slice(close + 1);
    return (rest === "" || isPort(rest)) && isLoopbackIpv6(h.slice(1, close));
  }
  const colon = h.indexOf(":");
  if (colon < 0) return isLoopbackName(h);
  // Two colons or more: an IPv6 address, whose port would need brackets.
  if (h.indexOf(":", colon + 1) >= 0) return isLoopbackIpv6(h);
  return isPort(h.slice(colon)) && isLoopbackName(h.slice(0, colon));
}
