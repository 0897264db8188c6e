import { formatIp, inCidr, parseCidr, parseIp, type Cidr, type Ip } from './outbound/address-policy.js';

/**
 * The client's address: the socket's peer, or behind proxies the operator runs
 * (`server.trust_proxy`), the nearest address in `X-Forwarded-For` that none of them wrote
 * for itself. Pure: header and peer in, an address out (http/server.ts passes them).
 *
 * Each proxy appends the address of whoever connected to it, so the list reads
 * client-written entries (any number, any content) followed by the entries the proxies
 * appended. Only the right end can be believed: the walk goes from the socket's peer
 * leftwards, past every trusted proxy, and stops at the first address that is not one; the
 * leftmost entry, which the client writes itself, is taken only when every hop is trusted.
 */

/** `server.trusted_proxies` compiled; an empty list trusts the socket's peer only (one proxy). */
export interface ProxyTrust {
  readonly cidrs: readonly Cidr[];
}

/** Compiles validated CIDR texts (config); IPv4-mapped IPv6 ranges are kept as the IPv4 range they map. */
export function proxyTrust(trustedProxies: readonly string[]): ProxyTrust {
  const cidrs: Cidr[] = [];
  for (const text of trustedProxies) {
    const cidr = parseCidr(text);
    if (typeof cidr === 'string') throw new Error(`bad trusted proxy ${text}: ${cidr}`);
    cidrs.push(unmapCidr(cidr));
  }
  return { cidrs };
}

/**
 * @param peer the socket's remote address (`::ffff:10.0.0.2` on a dual-stack socket)
 * @param forwarded the `X-Forwarded-For` header(s)
 * @param trust undefined without `server.trust_proxy`: the header is ignored
 */
export function resolveClientAddress(peer: string | undefined, forwarded: string | readonly string[] | undefined, trust: ProxyTrust | undefined): string {
  if (!trust || forwarded === undefined) return peerAddress(peer);
  const peerIp = peer === undefined ? undefined : parseIp(peer);
  const peerText = peerIp ? formatIp(unmap(peerIp)) : (peer ?? 'unknown');
  const listed = trust.cidrs.length > 0;
  // With a list, the peer itself must be on it: a client that reaches the gateway directly
  // (around the proxy) does not get its own X-Forwarded-For believed.
  if (listed && !(peerIp && isTrusted(unmap(peerIp), trust))) return peerText;
  const hops = (typeof forwarded === 'string' ? [forwarded] : forwarded).flatMap((value) => value.split(','));
  let chosen = peerText;
  for (let i = hops.length - 1; i >= 0; i--) {
    const text = (hops[i] as string).trim();
    if (text === '') continue;
    const ip = parseHop(text);
    // Not an address: no proxy wrote it, so it and everything left of it came from the
    // client. The address is the hop that passed it on (a trusted proxy, or the peer).
    if (!ip) return chosen;
    chosen = formatIp(ip);
    if (!listed || !isTrusted(ip, trust)) return chosen;
  }
  // Every hop is a trusted proxy: the leftmost one is the nearest thing to a client.
  return chosen;
}

/** Peers' addresses as the gateway writes them, remembered: a request's peer is usually a recent one's. */
const peers = new Map<string, string>();
/** Peers remembered at most; past it the memo starts over. */
const PEERS_MAX = 4096;

/** The socket's peer as the gateway writes it (parsing and formatting cost a few µs per request). */
function peerAddress(peer: string | undefined): string {
  if (peer === undefined) return 'unknown';
  let text = peers.get(peer);
  if (text === undefined) {
    const ip = parseIp(peer);
    text = ip ? formatIp(unmap(ip)) : peer;
    if (peers.size >= PEERS_MAX) peers.clear();
    peers.set(peer, text);
  }
  return text;
}

function isTrusted(ip: Ip, trust: ProxyTrust): boolean {
  return trust.cidrs.some((cidr) => inCidr(ip, cidr));
}

/**
 * One `X-Forwarded-For` entry: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `[2001:db8::1]`,
 * `[2001:db8::1]:443`, `::ffff:1.2.3.4` (as its IPv4 address); undefined when not an address.
 */
export function parseHop(text: string): Ip | undefined {
  let host = text;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end === -1 || !/^(:\d{1,5})?$/.test(host.slice(end + 1))) return undefined;
    host = host.slice(1, end);
  } else if (/^[\d.]+:\d{1,5}$/.test(host)) host = host.slice(0, host.indexOf(':'));
  if (host.includes('%')) return undefined;
  const ip = parseIp(host);
  return ip && unmap(ip);
}

/** The address the way the gateway writes it: dotted IPv4 (an IPv4-mapped IPv6 address too), RFC 5952 IPv6. */
export function normalizeAddress(text: string): string | undefined {
  const ip = parseHop(text);
  return ip && formatIp(ip);
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function isMapped(bytes: Uint8Array): boolean {
  return MAPPED_PREFIX.every((byte, i) => bytes[i] === byte);
}

/** `::ffff:a.b.c.d` is the IPv4 address a.b.c.d (what a dual-stack socket reports for IPv4 peers). */
function unmap(ip: Ip): Ip {
  return ip.family === 6 && isMapped(ip.bytes) ? { family: 4, bytes: ip.bytes.slice(12) } : ip;
}

function unmapCidr(cidr: Cidr): Cidr {
  return cidr.family === 6 && cidr.prefix >= 96 && isMapped(cidr.bytes) ? { family: 4, bytes: cidr.bytes.slice(12), prefix: cidr.prefix - 96 } : cidr;
}

/**
 * What per-address limits count against: an IPv4 address, or the /64 network of an IPv6
 * address (one subscriber's usual allocation: an IPv6 client has billions of addresses to
 * rotate through within it). Text that is not an address is its own subject.
 */
export function addressSubject(address: string): string {
  const ip = parseHop(address);
  if (!ip) return address;
  if (ip.family === 4) return formatIp(ip);
  const network = Uint8Array.from(ip.bytes);
  network.fill(0, 8);
  return `${formatIp({ family: 6, bytes: network })}/64`;
}

/**
 * A forwarded header's value as the nearest proxy set it (X-Forwarded-Host, X-Forwarded-Proto):
 * the last entry, as for X-Forwarded-For. A proxy that appends leaves the client's own value
 * in front, where it is never read; one that overwrites leaves a single entry.
 */
export function forwardedValue(value: string | readonly string[] | undefined): string | undefined {
  const last = Array.isArray(value) ? value.at(-1) : (value as string | undefined);
  return last?.split(',').at(-1)?.trim() || undefined;
}
