import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { addressSubject, forwardedValue, normalizeAddress, proxyTrust, resolveClientAddress } from '../../src/core/client-address.js';
import { clientAddress } from '../../src/http/server.js';

/**
 * The client address behind proxies (issue 28): with trust_proxy, the rightmost
 * X-Forwarded-For entry that is not a trusted proxy, never the client-written leftmost one.
 */

const peerOnly = proxyTrust([]);

t.test('without trust_proxy: the socket address, whatever the header says', async (t) => {
  t.equal(resolveClientAddress('203.0.113.9', '1.2.3.4', undefined), '203.0.113.9');
  t.equal(resolveClientAddress('::ffff:203.0.113.9', undefined, undefined), '203.0.113.9', 'an IPv4-mapped peer as its IPv4 address');
  t.equal(resolveClientAddress('2001:DB8:0:0::1', undefined, undefined), '2001:db8::1', 'IPv6 in RFC 5952 form');
  t.equal(resolveClientAddress(undefined, undefined, undefined), 'unknown');
});

t.test('trust_proxy with the default (the peer is the one proxy): the last entry', async (t) => {
  t.equal(resolveClientAddress('127.0.0.1', '198.51.100.7', peerOnly), '198.51.100.7');
  t.equal(resolveClientAddress('127.0.0.1', '6.6.6.6, 198.51.100.7', peerOnly), '198.51.100.7', 'a forged first hop is not taken');
  t.equal(resolveClientAddress('127.0.0.1', ['6.6.6.6, 7.7.7.7', '198.51.100.7'], peerOnly), '198.51.100.7', 'several header lines read as one list');
  t.equal(resolveClientAddress('::ffff:127.0.0.1', undefined, peerOnly), '127.0.0.1', 'no header: the peer');
  t.equal(resolveClientAddress('127.0.0.1', '', peerOnly), '127.0.0.1', 'an empty header: the peer');
  t.equal(resolveClientAddress('127.0.0.1', 'unknown', peerOnly), '127.0.0.1', 'not an address: the peer that passed it on');
  t.equal(resolveClientAddress('127.0.0.1', '1.2.3.4, 198.51.100.7 ,', peerOnly), '198.51.100.7', 'empty entries are skipped');
});

t.test('entry forms: ports, brackets, IPv6, IPv4-mapped IPv6', async (t) => {
  t.equal(resolveClientAddress('10.0.0.1', '198.51.100.7:53211', peerOnly), '198.51.100.7', 'IPv4 with a port');
  t.equal(resolveClientAddress('10.0.0.1', '[2001:db8::7]:443', peerOnly), '2001:db8::7', 'bracketed IPv6 with a port');
  t.equal(resolveClientAddress('10.0.0.1', '[2001:db8::7]', peerOnly), '2001:db8::7', 'bracketed IPv6');
  t.equal(resolveClientAddress('10.0.0.1', '2001:0DB8:0000::0007', peerOnly), '2001:db8::7', 'IPv6 written long');
  t.equal(resolveClientAddress('10.0.0.1', '::ffff:198.51.100.7', peerOnly), '198.51.100.7', 'IPv4-mapped IPv6 as IPv4');
  t.equal(resolveClientAddress('10.0.0.1', '::ffff:c633:6407', peerOnly), '198.51.100.7', 'IPv4-mapped IPv6 in hex');
  t.equal(resolveClientAddress('10.0.0.1', '[2001:db8::7', peerOnly), '10.0.0.1', 'an unclosed bracket is not an address');
  t.equal(resolveClientAddress('10.0.0.1', 'fe80::1%eth0', peerOnly), '10.0.0.1', 'a zone id is not a client address');
  t.equal(normalizeAddress('1.2.3.4:80'), '1.2.3.4');
  t.equal(normalizeAddress('nonsense'), undefined);
});

t.test('trusted_proxies: the rightmost entry that is not a trusted proxy', async (t) => {
  const trust = proxyTrust(['10.0.0.0/8', '192.168.1.10', 'fd00::/8']);
  // client ► CDN edge 10.1.1.1 ► load balancer 10.2.2.2 ► gateway; the client forged a first hop.
  t.equal(resolveClientAddress('10.2.2.2', '6.6.6.6, 198.51.100.7, 10.1.1.1', trust), '198.51.100.7', 'past both proxies, not the forged first hop');
  t.equal(resolveClientAddress('10.2.2.2', '198.51.100.7, 10.1.1.1', trust), '198.51.100.7');
  t.equal(resolveClientAddress('10.2.2.2', '6.6.6.6, 10.9.9.9, 10.1.1.1', trust), '6.6.6.6', 'a client may sit on a trusted network: still the first untrusted from the right');
  t.equal(resolveClientAddress('10.2.2.2', '10.5.5.5, 10.1.1.1', trust), '10.5.5.5', 'every entry trusted: the leftmost');
  t.equal(resolveClientAddress('10.2.2.2', undefined, trust), '10.2.2.2', 'no header and a trusted peer: the peer');
  t.equal(resolveClientAddress('::ffff:10.2.2.2', '198.51.100.7', trust), '198.51.100.7', 'an IPv4-mapped peer matches the IPv4 range');
  t.equal(resolveClientAddress('fd00::2', '2001:db8::7, fd00::1', trust), '2001:db8::7', 'IPv6 proxies');
  t.equal(resolveClientAddress('10.2.2.2', '198.51.100.7, 10.1.1.1:8080', trust), '198.51.100.7', 'a proxy entry with a port is still the proxy');
  t.equal(resolveClientAddress('10.2.2.2', 'garbage, 10.1.1.1', trust), '10.1.1.1', 'not an address: the trusted hop that passed it on');
  t.equal(resolveClientAddress('203.0.113.50', '198.51.100.7', trust), '203.0.113.50', 'a peer that is not a listed proxy: its own address, the header ignored');
  t.equal(resolveClientAddress('10.2.2.2', '198.51.100.7, 192.168.1.11', trust), '192.168.1.11', 'a bare address trusts that address only');
  const mappedRange = proxyTrust(['::ffff:10.0.0.0/104']);
  t.equal(resolveClientAddress('10.3.3.3', '198.51.100.7, 10.4.4.4', mappedRange), '198.51.100.7', 'an IPv4-mapped range covers the IPv4 addresses it maps');
});

t.test('http/server clientAddress: the socket and the header of a request', async (t) => {
  const req = (remoteAddress: string, xff?: string) => ({ socket: { remoteAddress }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;
  t.equal(clientAddress(req('::ffff:127.0.0.1', '6.6.6.6'), { trustProxy: false }), '127.0.0.1', 'without trust_proxy the header is ignored');
  t.equal(clientAddress(req('::ffff:127.0.0.1', '6.6.6.6, 198.51.100.7'), { trustProxy: true }), '198.51.100.7', 'a forged first hop is not the client');
  const options = { trustProxy: true, trustedProxies: ['127.0.0.1', '10.0.0.0/8'] };
  t.equal(clientAddress(req('127.0.0.1', '6.6.6.6, 198.51.100.7, 10.0.0.3'), options), '198.51.100.7');
  t.equal(clientAddress(req('127.0.0.1', '6.6.6.6, 198.51.100.8, 10.0.0.3'), options), '198.51.100.8', 'the compiled list is reused');
});

t.test('addressSubject: what per-address limits count against', async (t) => {
  t.equal(addressSubject('198.51.100.7'), '198.51.100.7');
  t.equal(addressSubject('::ffff:198.51.100.7'), '198.51.100.7');
  t.equal(addressSubject('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64', 'an IPv6 address as its /64');
  t.equal(addressSubject('2001:db8:1:2::9'), addressSubject('2001:db8:1:2:ffff::1'), 'one /64, one subject');
  t.not(addressSubject('2001:db8:1:2::9'), addressSubject('2001:db8:1:3::9'));
  t.equal(addressSubject('unknown'), 'unknown');
});

t.test('forwardedValue: X-Forwarded-Host and -Proto as the nearest proxy set them', async (t) => {
  t.equal(forwardedValue('llm.example.com'), 'llm.example.com', 'one entry (a proxy that overwrites)');
  t.equal(forwardedValue('evil.example, llm.example.com'), 'llm.example.com', 'a client-written entry in front is never read');
  t.equal(forwardedValue(['evil.example', 'http, https']), 'https', 'repeated headers: the last one, its last entry');
  t.equal(forwardedValue(undefined), undefined);
  t.equal(forwardedValue(' , '), undefined, 'an empty last entry: none');
});
