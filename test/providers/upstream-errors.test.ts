import t from 'tap';
import { encodeMessagesError } from '../../src/api/messages/encode.js';
import { PROVIDER_FAMILIES } from '../../src/providers/registry.js';
import { upstreamHttpError } from '../../src/providers/shared/errors.js';

/**
 * An upstream's 400 reaches the client in the upstream's own words: Claude Code recognises
 * Claude's `Unexpected role "system"` and retries without its system turns, so the wording
 * must pass unchanged (the provider is named in x-gateway-provider, not in the message).
 */

const CLAUDE_400 = {
  type: 'error',
  error: { type: 'invalid_request_error', message: 'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.' },
};

t.test('a 400 carries the upstream\'s message unchanged', async (t) => {
  const message = PROVIDER_FAMILIES.anthropic.errorMessage(CLAUDE_400);
  t.equal(message, CLAUDE_400.error.message, 'the message read from Claude\'s error body');
  const error = upstreamHttpError('anthropic-main', { status: 400, message, body: CLAUDE_400, retryAfterMs: undefined });
  t.match(error, { status: 400, type: 'invalid_request_error', reason: 'upstream_invalid_request' });
  t.equal(error.message, CLAUDE_400.error.message, 'no prefix, no truncation');
  const wire = encodeMessagesError(error);
  t.equal(wire.type, 'error');
  t.equal(wire.error.type, 'invalid_request_error', 'Anthropic\'s error type');
  t.match(wire.error.message, /Unexpected role "system"/, 'the wording Claude Code looks for');

  const long = 'x'.repeat(5000);
  t.equal(upstreamHttpError('p', { status: 422, message: long, body: undefined, retryAfterMs: undefined }).message, `${'x'.repeat(500)}…`, 'a long message cut at 500 characters');
  t.match(upstreamHttpError('p', { status: 413, message: 'prompt is too long', body: undefined, retryAfterMs: undefined }), { status: 413, message: 'prompt is too long' });
  t.equal(upstreamHttpError('p', { status: 400, message: undefined, body: undefined, retryAfterMs: undefined }).message, 'p rejected the request (HTTP 400)', 'no message: the gateway says who refused');
});

t.test('other failures still name the provider', async (t) => {
  t.match(upstreamHttpError('p', { status: 429, message: 'slow down', body: undefined, retryAfterMs: 2000 }), { status: 429, reason: 'upstream_rate_limited', message: 'p is rate limiting the gateway: slow down', headers: { 'retry-after': '2' } });
  t.match(upstreamHttpError('p', { status: 500, message: 'boom', body: undefined, retryAfterMs: undefined }), { status: 502, reason: 'upstream_error', message: 'p failed (HTTP 500): boom' });
  t.match(upstreamHttpError('p', { status: 401, message: 'bad key sk-123', body: undefined, retryAfterMs: undefined }), { status: 502, reason: 'upstream_auth_failed' });
  t.notMatch(upstreamHttpError('p', { status: 401, message: 'bad key sk-123', body: undefined, retryAfterMs: undefined }).message, /sk-123/, 'an auth failure does not relay the upstream\'s words');
});
