import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { CallSignal } from '../../src/core/abort.js';
import { CallAborted } from '../../src/core/errors.js';
import { ServiceAccountTokens } from '../../src/providers/vertex/token.js';

/** The service account's token cache without the network: a scripted token endpoint. */

const KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const ACCOUNT = { clientEmail: 'gw@p.iam.gserviceaccount.com', privateKey: KEY, tokenUri: 'https://oauth2.example.test/token' };

function endpoint() {
  const calls: string[] = [];
  const waiting: Array<(answer: { status: number; text: string }) => void> = [];
  let issued = 0;
  return {
    calls,
    post: (url: string, form: string) => {
      calls.push(`${url} ${form.slice(0, 100)}`);
      return new Promise<{ status: number; text: string }>((resolve) => waiting.push(resolve));
    },
    answer(status = 200, expiresIn = 3600) {
      issued += 1;
      const next = waiting.shift();
      next?.({ status, text: status === 200 ? JSON.stringify({ access_token: `token-${issued}`, expires_in: expiresIn, token_type: 'Bearer' }) : JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }) });
    },
  };
}

t.test('one exchange for every waiting call; a caller leaving does not fail the others', async (t) => {
  const server = endpoint();
  const tokens = new ServiceAccountTokens('vertex', ACCOUNT, server.post);
  const leaving = new CallSignal();
  const first = tokens.headers(undefined, leaving);
  const second = tokens.headers(undefined, new CallSignal());
  leaving.abort();
  await t.rejects(first, CallAborted, 'the caller that left gets CallAborted');
  server.answer();
  t.same(await second, { authorization: 'Bearer token-1' }, 'the other still gets the token');
  t.equal(server.calls.length, 1, 'one exchange');
  t.match(server.calls[0], /^https:\/\/oauth2\.example\.test\/token grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=/, "posted to the key file's token_uri");
  t.same(await tokens.headers(undefined, new CallSignal()), { authorization: 'Bearer token-1' }, 'cached');
  t.equal(server.calls.length, 1);
});

t.test('a 401 forgets only the token it was sent with', async (t) => {
  const server = endpoint();
  const tokens = new ServiceAccountTokens('vertex', ACCOUNT, server.post);
  const pending = tokens.headers(undefined, new CallSignal());
  server.answer();
  const old = await pending;
  t.ok(tokens.refused(old), 'ask once more');
  const refreshed = tokens.headers(undefined, new CallSignal());
  server.answer();
  const fresh = await refreshed;
  t.same(fresh, { authorization: 'Bearer token-2' });
  tokens.refused(old);
  t.same(await tokens.headers(undefined, new CallSignal()), fresh, 'a late 401 on the old token keeps the new one');
  t.equal(server.calls.length, 2);
});

t.test('a refused assertion is a clear error and is not cached', async (t) => {
  const server = endpoint();
  const tokens = new ServiceAccountTokens('vertex', ACCOUNT, server.post);
  const refused = tokens.headers(undefined, new CallSignal());
  server.answer(400);
  await t.rejects(refused, { status: 502, reason: 'upstream_auth_failed', message: /vertex could not get an access token for its service account \(HTTP 400: invalid_grant \(Invalid JWT Signature\.\)\)/ });
  const retried = tokens.headers(undefined, new CallSignal());
  server.answer();
  t.same(await retried, { authorization: 'Bearer token-2' }, 'the next call exchanges again');
});

t.test('a token is used until five minutes before it expires (half the life of a short one)', async (t) => {
  let now = 1_000_000;
  const server = endpoint();
  const tokens = new ServiceAccountTokens('vertex', ACCOUNT, server.post, () => now);
  const first = tokens.headers(undefined, new CallSignal());
  server.answer(200, 3600);
  await first;
  now += 54 * 60_000;
  await tokens.headers(undefined, new CallSignal());
  t.equal(server.calls.length, 1, 'at 54 minutes: the same token');
  now += 2 * 60_000;
  const renewed = tokens.headers(undefined, new CallSignal());
  t.equal(server.calls.length, 2, 'at 56 minutes: a new exchange');
  server.answer(200, 120);
  await renewed;
  now += 61_000;
  const again = tokens.headers(undefined, new CallSignal());
  t.equal(server.calls.length, 3, 'a two-minute token renewed after one');
  server.answer();
  await again;
});
