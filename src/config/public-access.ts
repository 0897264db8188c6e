import { parseCidr } from '../core/outbound/address-policy.js';
import { listItems, Problems, readBool, readInt, readSection, type Raw } from './fields.js';
import type { SignupConfig } from './types.js';

/** `server.trusted_proxies` and `auth.signup`: who the client is, and who may sign up (load.ts reads the rest). */

/**
 * `server.trusted_proxies`: the addresses and CIDRs of the proxies in front of the gateway
 * (`10.0.0.5`, `10.0.0.0/8`, `fd00::/8`). Empty: the socket's peer is the one trusted proxy.
 * Only meaningful with `trust_proxy`; set without it, it is a mistake worth saying.
 */
export function readTrustedProxies(server: Raw, problems: Problems): string[] {
  // trust_proxy itself is read (and any problem with it said) by load.ts.
  const trustProxy = readBool(server, 'trust_proxy', 'server', new Problems(), false);
  const out: string[] = [];
  for (const { value, at } of listItems(server.trusted_proxies, 'server.trusted_proxies', 'IP addresses or CIDRs like 10.0.0.0/8', problems)) {
    const cidr = typeof value === 'string' ? parseCidr(value.trim()) : 'must be an IP address or a CIDR like 10.0.0.0/8';
    if (typeof cidr === 'string') problems.add(at, cidr.replace('must be a CIDR like', 'must be an IP address or a CIDR like'));
    else out.push((value as string).trim());
  }
  if (out.length > 0 && !trustProxy) problems.add('server.trusted_proxies', 'has no effect without server.trust_proxy: true (set it, or remove the list)');
  return out;
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * `auth.signup`: `per_address` sign-ups an hour from one client address (an IPv6 /64),
 * `per_minute` sign-ups a minute in all (0: no limit, for either), and `email_domains`, the
 * only domains whose addresses may sign up (empty: any).
 */
export function readSignup(raw: unknown, problems: Problems): SignupConfig {
  const signup = readSection(raw, 'auth.signup', ['per_address', 'per_minute', 'email_domains'], problems);
  const emailDomains: string[] = [];
  for (const { value, at } of listItems(signup.email_domains, 'auth.signup.email_domains', 'domains like example.com', problems)) {
    const domain = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
    if (domain === undefined || !DOMAIN.test(domain)) {
      problems.add(at, typeof value === 'string' && value.trim().startsWith('@') ? 'must be a domain like example.com (without the @)' : 'must be a domain like example.com');
    } else if (!emailDomains.includes(domain)) emailDomains.push(domain);
  }
  return {
    perAddressPerHour: readInt(signup, 'per_address', 'auth.signup', problems, 0, 1_000_000, 5),
    perMinute: readInt(signup, 'per_minute', 'auth.signup', problems, 0, 1_000_000, 60),
    emailDomains,
  };
}
