import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which addresses and ports the gateway may connect to on a caller's behalf (image URLs
 * today, media URLs later). Pure: strings in, verdicts out; the fetcher (fetch-url.ts) asks
 * it about the URL's host and again about every address the name resolves to.
 *
 * Refused: every range that reaches the operator's own machine or network rather than the
 * public internet (RFC 6890's special-purpose registries), and the IPv6 forms that embed such
 * an IPv4 address (mapped, translated, NAT64, 6to4) or tunnel to one (IPv4-compatible,
 * Teredo). Written by hand rather than with node:net's BlockList: BlockList does not see the
 * IPv4 address inside NAT64 or 6to4 forms, and the verdict should say which range matched.
 */

/** The operator's allow-list: `outbound.allow_private` (CIDRs) and `outbound.allow_ports`. */
export interface OutboundPolicyConfig {
  readonly allowPrivate: readonly string[];
  readonly allowPorts: readonly number[];
}

/** Ports every URL may use; `allow_ports` adds to them. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

export interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

export interface Ip {
  family: 4 | 6;
  bytes: Uint8Array;
}

/** An IP literal (dotted quad, or IPv6 with optional brackets and zone id), or undefined. */
export function parseIp(text: string): Ip | undefined {
  let host = text;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const zone = host.indexOf('%');
  if (zone !== -1) host = host.slice(0, zone);
  if (isIPv4(host)) return { family: 4, bytes: Uint8Array.from(host.split('.').map(Number)) };
  if (isIPv6(host)) return { family: 6, bytes: parseIPv6(host) };
  return undefined;
}

/** Expands a valid (net.isIPv6) IPv6 text, with `::` and a trailing dotted quad, to 16 bytes. */
function parseIPv6(text: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let hex = text;
  let quad: number[] | undefined;
  if (hex.includes('.')) {
    const at = hex.lastIndexOf(':');
    quad = hex.slice(at + 1).split('.').map(Number);
    hex = `${hex.slice(0, at + 1)}0:0`;
  }
  const gap = hex.indexOf('::');
  const split = (part: string): string[] => (part === '' ? [] : part.split(':'));
  let groups: string[];
  if (gap === -1) groups = split(hex);
  else {
    const head = split(hex.slice(0, gap));
    const tail = split(hex.slice(gap + 2));
    groups = [...head, ...new Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  }
  groups.forEach((group, i) => {
    const value = Number.parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  if (quad) bytes.set(quad, 12);
  return bytes;
}

/**
 * `10.0.0.0/8`, `fd00::/8`, or a bare address (one host: /32 or /128). Returns a problem
 * string when the text is not one, for config validation.
 */
export function parseCidr(text: string): Cidr | string {
  const slash = text.indexOf('/');
  const ip = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (!ip || text.includes('[') || text.includes('%')) return 'must be a CIDR like 10.0.0.0/8 or fd00::/8';
  const max = ip.family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(max) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) return `must be a CIDR like 10.0.0.0/8 (prefix length 0 to ${max})`;
  const cidr: Cidr = { family: ip.family, bytes: ip.bytes, prefix: Number(prefixText) };
  for (let bit = cidr.prefix; bit < max; bit++) {
    if ((ip.bytes[bit >> 3] as number) & (0x80 >> (bit & 7))) return `has bits set after the prefix length: write the network address (${networkText(cidr)})`;
  }
  return cidr;
}

function networkText(cidr: Cidr): string {
  const bytes = Uint8Array.from(cidr.bytes);
  for (let bit = cidr.prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] = (bytes[bit >> 3] as number) & ~(0x80 >> (bit & 7));
  return `${formatIp({ family: cidr.family, bytes })}/${cidr.prefix}`;
}

/** Dotted IPv4, or IPv6 in RFC 5952 form (lowercase, the longest run of two or more zero groups as `::`). */
export function formatIp(ip: Ip): string {
  if (ip.family === 4) return Array.from(ip.bytes).join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] as number) << 8) | (ip.bytes[i + 1] as number));
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8; ) {
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > best.length) best = { at: i, length: end - i };
    i = end === i ? i + 1 : end;
  }
  const hex = (list: number[]): string => list.map((g) => g.toString(16)).join(':');
  return best.at === -1 ? hex(groups) : `${hex(groups.slice(0, best.at))}::${hex(groups.slice(best.at + best.length))}`;
}

export function inCidr(ip: Ip, cidr: Cidr): boolean {
  if (ip.family !== cidr.family) return false;
  const whole = cidr.prefix >> 3;
  for (let i = 0; i < whole; i++) if (ip.bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (((ip.bytes[whole] as number) ^ (cidr.bytes[whole] as number)) & mask) === 0;
}

function rules(table: ReadonlyArray<readonly [string, string]>): Array<{ cidr: Cidr; text: string; label: string }> {
  return table.map(([text, label]) => {
    const cidr = parseCidr(text);
    if (typeof cidr === 'string') throw new Error(`bad built-in range ${text}: ${cidr}`);
    return { cidr, text, label };
  });
}

/** IPv4 ranges that are not the public internet (RFC 6890, IANA special-purpose registry). */
const V4_REFUSED = rules([
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private (RFC 1918)'],
  ['100.64.0.0/10', 'carrier-grade NAT (RFC 6598)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata lives here)'],
  ['172.16.0.0/12', 'private (RFC 1918)'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay anycast (deprecated)'],
  ['192.168.0.0/16', 'private (RFC 1918)'],
  ['198.18.0.0/15', 'benchmarking (often used inside networks)'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved (and broadcast)'],
]);

/** IPv6 forms that carry an IPv4 address: connecting to them reaches (or routes to) that address. */
const V6_EMBEDDING = [
  { ...rules([['::ffff:0:0/96', 'IPv4-mapped']])[0]!, offset: 12 },
  { ...rules([['::ffff:0:0:0/96', 'IPv4-translated (SIIT)']])[0]!, offset: 12 },
  { ...rules([['64:ff9b::/96', 'NAT64']])[0]!, offset: 12 },
  { ...rules([['2002::/16', '6to4']])[0]!, offset: 2 },
];

/** Checked in order, after the unspecified and loopback addresses and the embedding forms. */
const V6_REFUSED = rules([
  ['::/96', 'IPv4-compatible (deprecated; tunnels to IPv4)'],
  ['100::/64', 'discard-only'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['2001::/23', 'IETF protocol assignments (Teredo and others)'],
  ['2001:db8::/32', 'documentation'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
]);
const V6_UNSPECIFIED = rules([['::/128', 'unspecified']])[0]!;
const V6_LOOPBACK = rules([['::1/128', 'loopback']])[0]!;

/** Why an address is not on the public internet, or undefined when it is (allow-list not consulted). */
export function describeForbiddenAddress(address: string): string | undefined {
  const ip = parseIp(address);
  if (!ip) return `${address} is not an IP address`;
  const range = forbiddenRange(ip);
  return range && `${address} is ${range}`;
}

/** `loopback (127.0.0.0/8)`, `the NAT64 form (64:ff9b::/96) of 10.0.0.1, private (...)`, or undefined. */
function forbiddenRange(ip: Ip): string | undefined {
  if (ip.family === 4) {
    const rule = V4_REFUSED.find((r) => inCidr(ip, r.cidr));
    return rule && `${rule.label} (${rule.text})`;
  }
  for (const rule of [V6_UNSPECIFIED, V6_LOOPBACK]) if (inCidr(ip, rule.cidr)) return `${rule.label} (${rule.text})`;
  for (const form of V6_EMBEDDING) {
    if (!inCidr(ip, form.cidr)) continue;
    const v4 = embeddedV4(ip, form.offset);
    const inner = forbiddenRange(v4);
    return inner && `the ${form.label} form (${form.text}) of ${v4.bytes.join('.')}, ${inner}`;
  }
  const rule = V6_REFUSED.find((r) => inCidr(ip, r.cidr));
  return rule && `${rule.label} (${rule.text})`;
}

function embeddedV4(ip: Ip, offset: number): Ip {
  return { family: 4, bytes: ip.bytes.slice(offset, offset + 4) };
}

/** The policy built once from config: the address rules above, minus the operator's allow-list. */
export class OutboundPolicy {
  private readonly allowed: Cidr[];
  private readonly ports: ReadonlySet<number>;

  constructor(config: OutboundPolicyConfig) {
    this.allowed = config.allowPrivate.map((text) => {
      const cidr = parseCidr(text);
      // The config loader validated these; a bad one here is a programming error.
      if (typeof cidr === 'string') throw new Error(`outbound.allow_private: ${text} ${cidr}`);
      return cidr;
    });
    this.ports = new Set([...DEFAULT_PORTS, ...config.allowPorts]);
  }

  /**
   * Why the gateway must not connect to this address, or undefined when it may. An address in
   * `allow_private` is allowed; so is an IPv4-mapped address whose IPv4 address is (a
   * dual-stack socket reaches the very same host through it).
   */
  checkAddress(address: string): string | undefined {
    const ip = parseIp(address);
    if (!ip) return `${address} is not an IP address`;
    const range = forbiddenRange(ip);
    if (range === undefined) return undefined;
    if (this.allowed.some((cidr) => inCidr(ip, cidr))) return undefined;
    const mapped = V6_EMBEDDING[0]!;
    if (ip.family === 6 && inCidr(ip, mapped.cidr) && this.allowed.some((cidr) => inCidr(embeddedV4(ip, mapped.offset), cidr))) return undefined;
    return `${address} is ${range}`;
  }

  /** Why the port is refused, or undefined: 80 and 443, plus `allow_ports`. */
  checkPort(port: number): string | undefined {
    return this.ports.has(port) ? undefined : `port ${port} is not allowed (allowed: ${[...this.ports].join(', ')}; see outbound.allow_ports)`;
  }

  /**
   * The checks a URL passes before any DNS lookup or connection: http(s) only, no
   * credentials, an allowed port, and, when the host is an IP literal, an allowed address.
   * The URL is the WHATWG-parsed one: odd IPv4 forms (`2130706433`, `0x7f.1`, `127.1`) are
   * already normalized to dotted quads there, and IPv6 hosts keep their brackets.
   */
  checkUrl(url: URL): { kind: 'forbidden_scheme' | 'credentials' | 'forbidden_port' | 'forbidden_address'; detail: string } | undefined {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { kind: 'forbidden_scheme', detail: `scheme ${url.protocol} is not http(s)` };
    if (url.username !== '' || url.password !== '') return { kind: 'credentials', detail: 'the URL carries credentials (user:password@)' };
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const badPort = this.checkPort(port);
    if (badPort) return { kind: 'forbidden_port', detail: badPort };
    if (parseIp(url.hostname)) {
      const why = this.checkAddress(url.hostname);
      if (why) return { kind: 'forbidden_address', detail: why };
    }
    return undefined;
  }
}
