// Which URLs a webhook endpoint may have (docs/webhooks.md "Endpoints"). A deployment delivers only
// to public https URLs on the default port: no credentials in the URL, no backslash before the path,
// no IP literal of a loopback, private, link-local, CGNAT, unique-local, multicast, reserved or
// unspecified range (IPv4 and IPv6, with every IPv6 form that embeds an IPv4 address judged by that
// address), no local-only names (localhost, *.localhost, *.local, *.internal, single-label hosts), no
// name with an empty label and no cloud metadata host. What is stored is the parser's normalised URL.
// WEBHOOKS_ALLOW_PRIVATE_URLS="true" (local development and tests) also allows http, any port but 0
// and loopback hosts (127.0.0.0/8, ::1, localhost), so a local receiver works; the other non-public
// hosts (private networks, link-local, metadata, ...) stay refused there too. Names are not resolved
// here: a public name that resolves to a private address is left to the platform (a Worker's fetch
// does not reach private networks).

import { echo } from "../lib/echo";

/** Longest URL accepted, in characters. */
export const MAX_URL_CHARS = 2048;

export type UrlCheck = { ok: true; url: URL } | { ok: false; msg: string };

/** Whether the deployment allows local/private webhook URLs (the WEBHOOKS_ALLOW_PRIVATE_URLS variable). */
export const allowsPrivateUrls = (env: { WEBHOOKS_ALLOW_PRIVATE_URLS?: string }) =>
  env.WEBHOOKS_ALLOW_PRIVATE_URLS?.trim().toLowerCase() === "true";

const refuse = (msg: string): UrlCheck => ({ ok: false, msg });

/**
 * Checks a webhook URL against the rules; `msg` names the rule broken. The URL to store and call is
 * `url.href`, the parser's normalised form (what was checked), never the raw text.
 */
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
    if (scheme !== "https" && scheme !== "http")
      return refuse(`url must use https (or http in local development), not ${echo(scheme)}`);
  } else if (scheme !== "https") {
    return refuse(scheme === "http" ? "url must use https" : `url must use https, not ${echo(scheme)}`);
  }
  // The WHATWG parser reads a backslash there as a slash (https://a.example\@127.0.0.1/ is host
  // a.example), other parsers as part of the authority (host 127.0.0.1): refused, so that no reader
  // of the URL can see another host than the one checked.
  if (SCHEME_AND_AUTHORITY.exec(raw.replace(/[\t\n\r]/g, ""))?.[0].includes("\\"))
    return refuse("url must not contain a backslash (\\) before its path");
  if (url.username !== "" || url.password !== "") return refuse("url must not contain credentials (user:password@)");
  if (url.hostname === "") return refuse("url must have a host");
  if (url.port === "0") return refuse("url must not use port 0");
  // The WHATWG parser drops a default port (443 for https, 80 for http), so any port left is another one.
  if (!allowPrivate && url.port !== "") return refuse(`url must use the default https port (443), not ${url.port}`);
  const hostProblem = publicHostProblem(url.hostname, allowPrivate);
  if (hostProblem)
    return refuse(allowPrivate ? `${hostProblem} (local development allows only loopback hosts)` : hostProblem);
  // Percent-encoding can make the normalised form several times longer than what was sent.
  if (url.href.length > MAX_URL_CHARS)
    return refuse(
      `url must be at most ${MAX_URL_CHARS} characters once normalised (percent-encoded), not ${url.href.length}`,
    );
  return { ok: true, url };
}

/** The scheme, the slashes after it and the authority: everything before the path, query or fragment (tabs and newlines, which the parser drops, removed first). */
const SCHEME_AND_AUTHORITY = /^[^:/?#]*:[/\\]*[^/?#]*/;

const V4_LOOPBACK = "loopback (127.0.0.0/8)";
const V6_LOOPBACK = "loopback (::1/128)";
/** The ranges local development allows: plain loopback addresses, not the IPv6 forms that embed 127.0.0.0/8. */
const LOOPBACK_RANGES = new Set([V4_LOOPBACK, V6_LOOPBACK]);
const nonPublic = (host: string, range: string) =>
  `url must not point to a private or reserved address: ${echo(host)} is ${range}`;

/**
 * Why `hostname` (as the URL parser normalised it) is not a public host; null when it is.
 * `allowLoopback`: loopback addresses and localhost pass (local development).
 */
function publicHostProblem(hostname: string, allowLoopback: boolean): string | null {
  const refused = (range: string | null) =>
    range === null || (allowLoopback && LOOPBACK_RANGES.has(range)) ? null : nonPublic(hostname, range);
  if (hostname.startsWith("[")) {
    const address = parseIpv6(hostname.slice(1, -1));
    if (address === null) return "url must have a valid host";
    return refused(ipv6Range(address));
  }
  const v4 = parseIpv4(hostname);
  if (v4 !== null) return refused(ipv4Range(v4));
  // One trailing dot is the FQDN form of the same name; an empty label anywhere else (a.., .a, a..b) is no host name.
  const name = hostname.replace(/\.$/, "").toLowerCase();
  if (name.split(".").includes("")) return `url must have a valid host name: ${echo(hostname)} has an empty label`;
  if (METADATA_HOSTS.has(name)) return `url must not point to a cloud metadata host (${echo(name)})`;
  if (name === "localhost" || name.endsWith(".localhost"))
    return allowLoopback ? null : "url must not point to localhost";
  const local = LOCAL_SUFFIXES.find((suffix) => name.endsWith(suffix));
  if (local) return `url must not point to a local-network name (*${local})`;
  if (!name.includes(".")) return `url must have a public domain name, not the single-label host ${echo(name)}`;
  return null;
}

const METADATA_HOSTS = new Set([
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
]);
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

/**
 * [network, prefix length, what it is] — every range a webhook may not target: each range of the IANA
 * IPv4 Special-Purpose Address Registry that is not globally reachable (255.255.255.255 is in 240/4), and multicast.
 */
const IPV4_RANGES: Array<[number, number, string]> = [
  [v4(0, 0, 0, 0), 8, "unspecified (0.0.0.0/8)"],
  [v4(10, 0, 0, 0), 8, "private (10.0.0.0/8)"],
  [v4(100, 64, 0, 0), 10, "carrier-grade NAT (100.64.0.0/10)"],
  [v4(127, 0, 0, 0), 8, V4_LOOPBACK],
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
    if ((address & mask) >>> 0 === network) return what;
  }
  return null;
}

// ---- IPv6 ----

/** An IPv6 address (the parser's compressed lowercase form) as a 128-bit number; null if malformed. */
function parseIpv6(text: string): bigint | null {
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
  const parse = (part: string) =>
    part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if ([...head, ...rest].some(Number.isNaN)) return null;
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...rest];
  return groups.reduce((address, group) => (address << 16n) | BigInt(group), 0n);
}

/** The 32 bits of `address` that end `shift` bits from its right end, as an IPv4 address. */
const ipv4At = (shift: bigint) => (address: bigint) => Number((address >> shift) & 0xffff_ffffn);

/**
 * A set of IPv6 addresses (`address & mask === value`) a webhook may not target: every address in
 * it, or, where `ipv4` says where an embedded IPv4 address sits, those whose IPv4 address is one
 * of IPV4_RANGES.
 */
type Ipv6Form = { value: bigint; mask: bigint; what: string; ipv4?: (address: bigint) => number };

/** `cidr` ("fc00::/7") as a value and mask; `what` names it in messages. */
function prefix(cidr: string, what: string, ipv4?: Ipv6Form["ipv4"]): Ipv6Form {
  const [network, bits] = cidr.split("/");
  const mask = ((1n << BigInt(bits!)) - 1n) << BigInt(128 - Number(bits));
  return { value: parseIpv6(network!)!, mask, what: ipv4 ? what : `${what} (${cidr})`, ipv4 };
}

const LAST_32 = ipv4At(0n);

/** Every form refused, in the order tried: the first that refuses names the reason. */
const IPV6_FORMS: Ipv6Form[] = [
  prefix("::/128", "unspecified"),
  prefix("::1/128", "loopback"), // its message is V6_LOOPBACK
  // The forms that carry an IPv4 address: that address decides.
  prefix("::ffff:0:0/96", "IPv4-mapped", LAST_32),
  prefix("::ffff:0:0:0/96", "IPv4-translated", LAST_32), // RFC 2765
  prefix("::/96", "IPv4-compatible", LAST_32),
  prefix("64:ff9b::/96", "NAT64-mapped", LAST_32),
  prefix("2002::/16", "6to4-mapped", ipv4At(80n)),
  prefix("2001::/32", "Teredo server", ipv4At(64n)),
  prefix("2001::/32", "Teredo client", (address) => (LAST_32(address) ^ 0xffff_ffff) >>> 0), // stored inverted
  // ISATAP (RFC 5214): interface id 0000:5efe:a.b.c.d (0200:5efe:… with the u bit) under any prefix; u and g bits ignored.
  { value: parseIpv6("::5efe:0:0")!, mask: parseIpv6("::fcff:ffff:0:0")!, what: "ISATAP", ipv4: LAST_32 },
  // Not globally reachable (IANA IPv6 Special-Purpose Address Registry).
  prefix("64:ff9b:1::/48", "local-use NAT64"), // RFC 8215: whatever IPv4 address it embeds
  prefix("100::/64", "discard-only"),
  prefix("2001:2::/48", "benchmarking"),
  prefix("2001:10::/28", "ORCHID"),
  prefix("2001:db8::/32", "documentation"),
  prefix("3fff::/20", "documentation"),
  prefix("5f00::/16", "segment routing (SRv6) SIDs"),
  prefix("fc00::/7", "unique-local"),
  prefix("fe80::/10", "link-local"),
  prefix("fec0::/10", "site-local"),
  prefix("ff00::/8", "multicast"),
];

function ipv6Range(address: bigint): string | null {
  for (const { value, mask, what, ipv4 } of IPV6_FORMS) {
    if ((address & mask) !== value) continue;
    if (!ipv4) return what;
    const range = ipv4Range(ipv4(address));
    if (range) return `${what} ${range}`;
  }
  return null;
}
