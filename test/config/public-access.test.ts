import { join } from 'node:path';
import t from 'tap';
import { loadConfig, PACKAGE_ROOT } from '../../src/config/load.js';
import { build, problemsOf } from '../support/config.js';

/** `server.trusted_proxies` and `auth.signup` (issue 28): defaults, forms, path-precise problems. */

t.test('defaults: 5 sign-ups an hour per address, 60 a minute, any domain; only the peer is a trusted proxy', async (t) => {
  const config = build({});
  t.same(config.auth.signup, { perAddressPerHour: 5, perMinute: 60, emailDomains: [] });
  t.equal(config.auth.allowSignup, true, 'sign-up stays open by default');
  t.equal(config.server.trustProxy, false);
  t.same(config.server.trustedProxies, []);
  const example = loadConfig({ file: join(PACKAGE_ROOT, 'gateway.example.yaml'), env: {} });
  t.same(example.auth.signup, config.auth.signup, 'gateway.example.yaml states the defaults');
  t.same(example.server.trustedProxies, []);
  t.ok(Object.isFrozen(config.auth.signup.emailDomains) && Object.isFrozen(config.server.trustedProxies), 'frozen with the rest');
});

t.test('auth.signup: set fields merge over the defaults; lists or comma-separated strings', async (t) => {
  t.same(build({ auth: { signup: { per_minute: 10 } } }).auth.signup, { perAddressPerHour: 5, perMinute: 10, emailDomains: [] }, 'one field set, the others default');
  t.same(build({ auth: { signup: { per_address: 0, per_minute: '0' } } }).auth.signup, { perAddressPerHour: 0, perMinute: 0, emailDomains: [] }, '0: no limit');
  t.same(build({ auth: { signup: { email_domains: ['Example.com', 'eng.example.org', 'example.com'] } } }).auth.signup.emailDomains, ['example.com', 'eng.example.org'], 'lowercase, without duplicates');
  t.same(build({ auth: { signup: { email_domains: '${DOMAINS}' } } }, { DOMAINS: 'a.example, b.example' }).auth.signup.emailDomains, ['a.example', 'b.example'], 'from ${VAR}, comma-separated');
  t.same(build({ auth: { signup: { email_domains: '${UNSET:-}' } } }).auth.signup.emailDomains, [], 'an unset variable: any domain');
  t.same(build({ auth: { allow_signup: false, login: { max_failures: 3 } } }).auth.signup.perAddressPerHour, 5, 'other auth settings leave the signup defaults');
  t.equal(build({ auth: { allow_signup: 'false' } }).auth.allowSignup, false, 'allow_signup still turns sign-up off');
});

t.test('auth.signup: path-precise problems', async (t) => {
  t.same(problemsOf({ auth: { signup: { per_address: -1, per_minute: 'lots' } } }), [
    'auth.signup.per_address: must be an integer from 0 to 1000000',
    'auth.signup.per_minute: must be an integer from 0 to 1000000',
  ]);
  t.same(problemsOf({ auth: { signup: { email_domains: ['example.com', '@example.org', 'not a domain', 42, 'localhost'] } } }), [
    'auth.signup.email_domains[1]: must be a domain like example.com (without the @)',
    'auth.signup.email_domains[2]: must be a domain like example.com',
    'auth.signup.email_domains[3]: must be a domain like example.com',
    'auth.signup.email_domains[4]: must be a domain like example.com',
  ]);
  t.same(problemsOf({ auth: { signup: { email_domains: { example: true } } } }), ['auth.signup.email_domains: must be a list of domains like example.com']);
  t.match(problemsOf({ auth: { signup: { per_hour: 5 } } }), [/^auth\.signup\.per_hour: unknown key \(expected one of: per_address, per_minute, email_domains\)$/]);
  t.same(problemsOf({ auth: { signup: 'off' } }), ['auth.signup: must be a mapping']);
});

t.test('server.trusted_proxies: addresses and CIDRs, IPv4 and IPv6', async (t) => {
  const config = build({ server: { trust_proxy: true, trusted_proxies: ['10.0.0.0/8', '192.168.1.10', 'fd00::/8', '::1', '::ffff:10.1.0.0/112'] } });
  t.same(config.server.trustedProxies, ['10.0.0.0/8', '192.168.1.10', 'fd00::/8', '::1', '::ffff:10.1.0.0/112']);
  t.same(build({ server: { trust_proxy: '${TRUST:-true}', trusted_proxies: '${PROXIES}' } }, { PROXIES: '10.0.0.1, 10.0.0.2' }).server.trustedProxies, ['10.0.0.1', '10.0.0.2'], 'from ${VAR}');
  t.same(build({ server: { trusted_proxies: '${UNSET:-}' } }).server.trustedProxies, [], 'an unset variable: empty, fine without trust_proxy');
});

t.test('server.trusted_proxies: path-precise problems', async (t) => {
  t.same(problemsOf({ server: { trust_proxy: true, trusted_proxies: ['10.0.0.0/8', 'proxy.internal', '10.0.0.1/8', '10.0.0.0/33', 7] } }), [
    'server.trusted_proxies[1]: must be an IP address or a CIDR like 10.0.0.0/8 or fd00::/8',
    'server.trusted_proxies[2]: has bits set after the prefix length: write the network address (10.0.0.0/8)',
    'server.trusted_proxies[3]: must be an IP address or a CIDR like 10.0.0.0/8 (prefix length 0 to 32)',
    'server.trusted_proxies[4]: must be an IP address or a CIDR like 10.0.0.0/8',
  ]);
  t.same(problemsOf({ server: { trust_proxy: true, trusted_proxies: '10.0.0.0/8, [::1]' } }), ['server.trusted_proxies[1]: must be an IP address or a CIDR like 10.0.0.0/8 or fd00::/8']);
  t.same(problemsOf({ server: { trust_proxy: true, trusted_proxies: { lb: '10.0.0.1' } } }), ['server.trusted_proxies: must be a list of IP addresses or CIDRs like 10.0.0.0/8']);
  t.same(problemsOf({ server: { trusted_proxies: ['10.0.0.1'] } }), ['server.trusted_proxies: has no effect without server.trust_proxy: true (set it, or remove the list)']);
});
