import t from 'tap';
import { describeForbiddenAddress, OutboundPolicy, parseCidr, parseIp } from '../../src/core/outbound/address-policy.js';

/** [address, the range it must be refused as (a substring of the reason), or null when allowed]. */
const ADDRESSES: Array<[string, string | null]> = [
  // IPv4
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private (RFC 1918)'],
  ['10.255.255.1', 'private (RFC 1918)'],
  ['172.16.0.1', 'private (RFC 1918)'],
  ['172.31.255.255', 'private (RFC 1918)'],
  ['172.32.0.1', null],
  ['172.15.255.255', null],
  ['192.168.1.1', 'private (RFC 1918)'],
  ['169.254.169.254', 'link-local'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.255', 'carrier-grade NAT'],
  ['100.128.0.1', null],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved (and broadcast)'],
  ['192.0.0.170', 'IETF protocol assignments'],
  ['198.18.0.1', 'benchmarking'],
  ['192.0.2.1', 'documentation'],
  ['8.8.8.8', null],
  ['1.1.1.1', null],
  ['93.184.215.14', null],
  // IPv6
  ['::1', 'loopback (::1/128)'],
  ['[::1]', 'loopback (::1/128)'],
  ['0:0:0:0:0:0:0:1', 'loopback (::1/128)'],
  ['::', 'unspecified (::/128)'],
  ['fe80::1', 'link-local (fe80::/10)'],
  ['fe80::1%eth0', 'link-local (fe80::/10)'],
  ['febf:ffff::1', 'link-local (fe80::/10)'],
  ['fec0::1', 'site-local'],
  ['fc00::1', 'unique-local (fc00::/7)'],
  ['fd12:3456:789a::1', 'unique-local (fc00::/7)'],
  ['ff02::1', 'multicast (ff00::/8)'],
  ['2001:db8::1', 'documentation'],
  ['2001::1', 'Teredo'],
  ['100::1', 'discard-only'],
  ['2606:4700:4700::1111', null],
  ['2a00:1450:4001:80b::200e', null],
  // IPv4 inside IPv6
  ['::ffff:127.0.0.1', 'IPv4-mapped form (::ffff:0:0/96) of 127.0.0.1, loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped form (::ffff:0:0/96) of 127.0.0.1, loopback'],
  ['[::ffff:7f00:1]', 'IPv4-mapped form (::ffff:0:0/96) of 127.0.0.1, loopback'],
  ['::ffff:a9fe:a9fe', 'of 169.254.169.254, link-local'],
  ['::ffff:10.1.2.3', 'of 10.1.2.3, private'],
  ['::ffff:8.8.8.8', null],
  ['::ffff:0:127.0.0.1', 'IPv4-translated'],
  ['::127.0.0.1', 'IPv4-compatible'],
  ['::7f00:1', 'IPv4-compatible'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['64:ff9b::127.0.0.1', 'NAT64 form (64:ff9b::/96) of 127.0.0.1, loopback'],
  ['64:ff9b::a00:1', 'NAT64 form (64:ff9b::/96) of 10.0.0.1, private'],
  ['64:ff9b::808:808', null],
  ['64:ff9b:1::1', 'local-use NAT64'],
  ['2002:7f00:1::1', '6to4 form (2002::/16) of 127.0.0.1, loopback'],
  ['2002:a9fe:a9fe::', '6to4 form (2002::/16) of 169.254.169.254, link-local'],
  ['2002:c0a8:101::1', 'of 192.168.1.1, private'],
  ['2002:808:808::1', null],
  // not addresses
  ['localhost', 'not an IP address'],
  ['0x7f.1', 'not an IP address'],
  ['2130706433', 'not an IP address'],
];

t.test('addresses: refused ranges, with the range named; public addresses allowed', async (t) => {
  const policy = new OutboundPolicy({ allowPrivate: [], allowPorts: [] });
  for (const [address, expected] of ADDRESSES) {
    const why = policy.checkAddress(address);
    if (expected === null) t.equal(why, undefined, `${address} is allowed`);
    else t.match(why, expected, `${address}: ${why}`);
    t.equal(describeForbiddenAddress(address), why, `${address}: the same verdict without a policy`);
  }
});

t.test('odd IPv4 literals are normalized by the WHATWG URL parser, then refused', async (t) => {
  const policy = new OutboundPolicy({ allowPrivate: [], allowPorts: [] });
  const urls: Array<[string, string]> = [
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://127.0.1/', '127.0.0.1'],
    ['http://0/', '0.0.0.0'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
    ['http://[0:0:0:0:0:0:0:1]/', '[::1]'],
    ['http://169.254.169.254./latest/meta-data/', '169.254.169.254'],
    ['http://0xa9.0xfe.0xa9.0xfe/', '169.254.169.254'],
    ['http://%31%32%37.0.0.1/', '127.0.0.1'],
  ];
  for (const [text, hostname] of urls) {
    const url = new URL(text);
    t.equal(url.hostname, hostname, `${text} parses to ${hostname}`);
    t.equal(policy.checkUrl(url)?.kind, 'forbidden_address', `${text} is refused before any lookup`);
  }
  t.equal(policy.checkUrl(new URL('http://example.com/a.png')), undefined, 'a name passes the URL check (its addresses are checked at connect)');
  t.equal(policy.checkUrl(new URL('https://8.8.8.8/a.png')), undefined, 'a public literal passes');
});

t.test('URLs: scheme, credentials and ports', async (t) => {
  const policy = new OutboundPolicy({ allowPrivate: [], allowPorts: [8443] });
  const kind = (text: string) => policy.checkUrl(new URL(text))?.kind;
  t.equal(kind('ftp://example.com/a.png'), 'forbidden_scheme');
  t.equal(kind('file:///etc/passwd'), 'forbidden_scheme');
  t.equal(kind('http://user:pass@example.com/a.png'), 'credentials');
  t.equal(kind('http://user@example.com/a.png'), 'credentials');
  t.equal(kind('http://:pass@example.com/a.png'), 'credentials');
  t.equal(kind('http://example.com:8080/a.png'), 'forbidden_port');
  t.equal(kind('http://example.com:22/'), 'forbidden_port');
  t.equal(kind('http://example.com:80/a.png'), undefined, 'port 80');
  t.equal(kind('https://example.com:443/a.png'), undefined, 'port 443');
  t.equal(kind('http://example.com:443/a.png'), undefined, '443 over http too');
  t.equal(kind('https://example.com:8443/a.png'), undefined, 'allow_ports adds to 80 and 443');
  t.equal(kind('http://127.0.0.1:8443/'), 'forbidden_address', 'an allowed port does not allow an address');
  t.match(policy.checkPort(8080), /port 8080 is not allowed \(allowed: 80, 443, 8443/);
});

t.test('allow_private: listed CIDRs are allowed, and only those', async (t) => {
  const policy = new OutboundPolicy({ allowPrivate: ['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32'], allowPorts: [] });
  t.equal(policy.checkAddress('127.0.0.1'), undefined);
  t.match(policy.checkAddress('127.0.0.2'), 'loopback', 'the /32 is one address');
  t.equal(policy.checkAddress('10.20.255.1'), undefined);
  t.match(policy.checkAddress('10.21.0.1'), 'private');
  t.equal(policy.checkAddress('fd00:1:ffff::1'), undefined);
  t.match(policy.checkAddress('fd00:2::1'), 'unique-local');
  t.equal(policy.checkAddress('::ffff:10.20.0.5'), undefined, 'the IPv4-mapped form of an allowed address is the same host');
  t.match(policy.checkAddress('64:ff9b::a14:5'), 'NAT64', 'other embedding forms are not the allowed host itself');
  t.match(policy.checkAddress('::1'), 'loopback');
  t.equal(policy.checkAddress('8.8.8.8'), undefined, 'public addresses stay allowed');
  t.equal(new OutboundPolicy({ allowPrivate: ['0.0.0.0/0'], allowPorts: [] }).checkAddress('169.254.169.254'), undefined, '0.0.0.0/0 allows every IPv4 address');
});

t.test('parseCidr and parseIp', async (t) => {
  t.same(parseCidr('10.0.0.0/8'), { family: 4, bytes: Uint8Array.from([10, 0, 0, 0]), prefix: 8 });
  t.equal((parseCidr('192.168.1.7') as { prefix: number }).prefix, 32, 'a bare address is one host');
  t.equal((parseCidr('fd00::/8') as { prefix: number }).prefix, 8);
  t.equal((parseCidr('::1') as { prefix: number }).prefix, 128);
  t.match(parseCidr('10.0.0.1/8'), /bits set after the prefix length: write the network address \(10\.0\.0\.0\/8\)/);
  t.match(parseCidr('fd00::1/8'), /\(fd00::\/8\)/);
  t.match(parseCidr('10.0.0.0/33'), /prefix length 0 to 32/);
  t.match(parseCidr('10.0.0.0/'), /must be a CIDR/);
  t.match(parseCidr('example.com/8'), /must be a CIDR like 10\.0\.0\.0\/8/);
  t.match(parseCidr('[::1]/128'), /must be a CIDR/);
  t.match(parseCidr('10.0.0/8'), /must be a CIDR/, 'short IPv4 forms are not CIDRs');
  t.same(parseIp('::ffff:1.2.3.4')?.bytes, Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]));
  t.same(parseIp('1::')?.bytes, Uint8Array.from([0, 1, ...new Array<number>(14).fill(0)]));
  t.same(parseIp('1:2:3:4:5:6:7:8')?.bytes, Uint8Array.from([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]));
  t.equal(parseIp('1.2.3'), undefined);
  t.equal(parseIp('example.com'), undefined);
});
