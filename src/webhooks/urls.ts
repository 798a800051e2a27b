// Which URLs a webhook endpoint may have (docs/webhooks.md "Endpoints"). A deployment delivers only
// to public https URLs on the default port: no credentials in the URL, no IP literal of a
// loopback, private, link-local, CGNAT, unique-local, multicast, reserved or unspecified range (IPv4
// and IPv6, IPv4-mapped and other IPv4-embedding IPv6 forms included), no local-only names
// (localhost, *.localhost, *.local, *.internal, single-label hosts) and no cloud metadata host.
// WEBHOOKS_ALLOW_PRIVATE_URLS="true" (local development and tests) also allows http, any port and
// loopback hosts (127.0.0.0/8, ::1, localhost), so a local receiver works; the other non-public
// hosts (private networks, link-local, metadata, ...) stay refused there too. Names are not resolved
// here: a public name that resolves to a private address is left to the platform (a Worker's fetch
// does not reach private networks).

import { echo } from "../lib/echo";

/** Longest URL accepted, in characters. */
export const MAX_URL_CHARS = 2048;

export type UrlCheck = { ok: true; url: URL } | { ok: false; msg: string };

/** Whether the deployment allows local/private webhook URLs (the WEBHOOKS_ALLOW_PRIVATE_URLS variable). */
export const allowsPrivateUrls = (env: { WEBHOOKS_ALLOW_PRIVATE_URLS?: string }) => env.WEBHOOKS_ALLOW_PRIVATE_URLS?.trim().toLowerCase() === "true";

const refuse = (msg: string): UrlCheck => ({ ok: false, msg });

/** Checks a webhook URL against the rules; `msg` names the rule broken. */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): UrlCheck {
  if (raw.length > MAX_URL_CHARS) return refuse(`url must be at most ${MAX_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("url must be an absolute URL (https://host/path)");
  }
  const scheme = url.protocol.slice(0, -1);
  if (allowPrivate) {
    if (scheme !== "https" && scheme !== "http") return refuse(`url must use https (or http in local development), not ${echo(scheme)}`);
  } else if (scheme !== "https") {
    return refuse(scheme === "http" ? "url must use https" : `url must use https, not ${echo(scheme)}`);
  }
  if (url.username !== "" || url.password !== "") return refuse("url must not contain credentials (user:password@)");
  if (url.hostname === "") return refuse("url must have a host");
  // The WHATWG parser drops a default port (443 for https, 80 for http), so any port left is another one.
  if (!allowPrivate && url.port !== "") return refuse(`url must use the default https port (443), not ${url.port}`);
  const hostProblem = publicHostProblem(url.hostname, allowPrivate);
  if (hostProblem) return refuse(allowPrivate ? `${hostProblem} (local development allows only loopback hosts)` : hostProblem);
  return { ok: true, url };
}

const LOOPBACK = "loopback";
const nonPublic = (host: string, range: string) => `url must not point to a private or reserved address: ${echo(host)} is ${range}`;

/**
 * Why `hostname` (as the URL parser normalised it) is not a public host; null when it is.
 * `allowLoopback`: loopback addresses and localhost pass (local development).
 */
function publicHostProblem(hostname: string, allowLoopback: boolean): string | null {
  const refused = (range: string | null) => (range === null || (allowLoopback && range.includes(LOOPBACK)) ? null : nonPublic(hostname, range));
  if (hostname.startsWith("[")) {
    const groups = parseIpv6(hostname.slice(1, -1));
    if (!groups) return "url must have a valid host";
    return refused(ipv6Range(groups));
  }
  const v4 = parseIpv4(hostname);
  if (v4 !== null) return refused(ipv4Range(v4));
  const name = hostname.replace(/\.$/, "").toLowerCase();
  if (METADATA_HOSTS.has(name)) return `url must not point to a cloud metadata host (${echo(name)})`;
  if (name === "localhost" || name.endsWith(".localhost")) return allowLoopback ? null : "url must not point to localhost";
  const local = LOCAL_SUFFIXES.find((suffix) => name.endsWith(suffix));
  if (local) return `url must not point to a local-network name (*${local})`;
  if (!name.includes(".")) return `url must have a public domain name, not the single-label host ${echo(name)}`;
  return null;
}

const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"]);
const LOCAL_SUFFIXES = [".local", ".internal", ".intranet", ".lan", ".home.arpa", ".localdomain"];

// ---- IPv4 ----

/** A dotted-quad (the parser has already turned 0x7f.1, 2130706433 and the like into one) as a 32-bit number. */
function parseIpv4(host: string): number | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return null;
  return ((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!;
}

const v4 = (a: number, b: number, c: number, d: number) => ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;

/** [network, prefix length, what it is] — every range a webhook may not target. */
const IPV4_RANGES: Array<[number, number, string]> = [
  [v4(0, 0, 0, 0), 8, "unspecified (0.0.0.0/8)"],
  [v4(10, 0, 0, 0), 8, "private (10.0.0.0/8)"],
  [v4(100, 64, 0, 0), 10, "carrier-grade NAT (100.64.0.0/10)"],
  [v4(127, 0, 0, 0), 8, "loopback (127.0.0.0/8)"],
  [v4(169, 254, 169, 254), 32, "cloud metadata (169.254.169.254)"],
  [v4(169, 254, 0, 0), 16, "link-local (169.254.0.0/16)"],
  [v4(172, 16, 0, 0), 12, "private (172.16.0.0/12)"],
  [v4(192, 0, 0, 0), 24, "reserved (192.0.0.0/24)"],
  [v4(192, 0, 2, 0), 24, "documentation (192.0.2.0/24)"],
  [v4(192, 88, 99, 0), 24, "reserved (192.88.99.0/24)"],
  [v4(192, 168, 0, 0), 16, "private (192.168.0.0/16)"],
  [v4(198, 18, 0, 0), 15, "benchmarking (198.18.0.0/15)"],
  [v4(198, 51, 100, 0), 24, "documentation (198.51.100.0/24)"],
  [v4(203, 0, 113, 0), 24, "documentation (203.0.113.0/24)"],
  [v4(224, 0, 0, 0), 4, "multicast (224.0.0.0/4)"],
  [v4(240, 0, 0, 0), 4, "reserved (240.0.0.0/4)"],
];

function ipv4Range(address: number): string | null {
  for (const [network, bits, what] of IPV4_RANGES) {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if (((address & mask) >>> 0) === network) return what;
  }
  return null;
}

// ---- IPv6 ----

/** The eight 16-bit groups of an IPv6 address (the parser's compressed lowercase form); null if malformed. */
function parseIpv6(text: string): number[] | null {
  let body = text;
  // An embedded dotted quad (the URL parser rewrites it as hex, but be safe): two hex groups.
  const dotted = /:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(body);
  if (dotted) {
    const value = parseIpv4(dotted[1]!);
    if (value === null) return null;
    body = `${body.slice(0, dotted.index + 1)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if ([...head, ...rest].some(Number.isNaN)) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - rest.length;
  if (missing < 1) return null;
  return [...head, ...new Array<number>(missing).fill(0), ...rest];
}

function ipv6Range(g: number[]): string | null {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  const embedded = (hi: number, lo: number) => (((hi << 16) >>> 0) + lo) >>> 0;
  if (zeroUpTo(8)) return "unspecified (::)";
  if (zeroUpTo(7) && g[7] === 1) return "loopback (::1)";
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d: the IPv4 address decides.
  if (zeroUpTo(5) && (g[5] === 0xffff || g[5] === 0)) {
    const range = ipv4Range(embedded(g[6]!, g[7]!));
    return range ? `${g[5] === 0xffff ? "IPv4-mapped" : "IPv4-compatible"} ${range}` : null;
  }
  // NAT64 64:ff9b::a.b.c.d.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const range = ipv4Range(embedded(g[6]!, g[7]!));
    return range ? `NAT64-mapped ${range}` : null;
  }
  // 6to4 2002:a.b.c.d::/48.
  if (g[0] === 0x2002) {
    const range = ipv4Range(embedded(g[1]!, g[2]!));
    return range ? `6to4-mapped ${range}` : null;
  }
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return "unique-local (fc00::/7)";
  if ((first & 0xffc0) === 0xfe80) return "link-local (fe80::/10)";
  if ((first & 0xffc0) === 0xfec0) return "site-local (fec0::/10)";
  if ((first & 0xff00) === 0xff00) return "multicast (ff00::/8)";
  if (first === 0x2001 && g[1] === 0x0db8) return "documentation (2001:db8::/32)";
  if (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return "discard-only (100::/64)";
  return null;
}
