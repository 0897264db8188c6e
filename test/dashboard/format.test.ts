import t from 'tap';
import { endpointLabel, formatAgo, formatContext, formatLatency, formatQuantity, formatRemaining } from '../../src/dashboard/lib/format.js';

t.test('quantities a call used, in its unit', async (t) => {
  t.equal(formatQuantity({ unit: 'tokens', units: 1550, input_tokens: 1200, output_tokens: 350, endpoint: 'chat.completions' }), '1,200 in · 350 out');
  t.equal(formatQuantity({ unit: 'tokens', units: 1234567, input_tokens: 1234567, output_tokens: 0, endpoint: 'embeddings' }), '12,34,567 tokens');
  t.equal(formatQuantity({ unit: 'characters', units: 42, input_tokens: 0, output_tokens: 0, endpoint: 'audio.speech' }), '42 characters');
  t.equal(formatQuantity({ unit: 'seconds', units: 1, input_tokens: 0, output_tokens: 0, endpoint: 'audio.transcriptions' }), '1 second');
  t.equal(formatQuantity({ unit: 'images', units: 3, input_tokens: 0, output_tokens: 0, endpoint: 'images.generations' }), '3 images');
  t.equal(formatQuantity({ input_tokens: 5, output_tokens: 6, endpoint: 'messages' }), '5 in · 6 out', 'rows without a unit are token rows');
});

t.test('latency, age, labels', async (t) => {
  t.equal(formatLatency(28), '28 ms');
  t.equal(formatLatency(1234), '1.23 s');
  t.equal(formatLatency(65_000), '65.0 s');
  t.equal(formatLatency(null), '—');
  const now = Date.parse('2026-03-10T12:00:00Z');
  t.equal(formatAgo(null, now), 'Never');
  t.equal(formatAgo('2026-03-10T11:59:50Z', now), 'just now');
  t.equal(formatAgo('2026-03-10T11:55:00Z', now), '5 min ago');
  t.equal(formatAgo('2026-03-10T09:00:00Z', now), '3 h ago');
  t.equal(formatAgo('2026-03-09T12:00:00Z', now), '1 day ago');
  t.equal(formatAgo('2026-03-01T12:00:00Z', now), '9 days ago');
  t.equal(endpointLabel('chat.completions'), 'Chat completions');
  t.equal(endpointLabel('something.new'), 'something.new', 'an unknown endpoint as it is');
  t.equal(formatContext(128000, 'tokens'), '1,28,000 tokens');
  t.equal(formatContext(0, null), '—');
});

t.test('time left of a rest', async (t) => {
  const now = Date.parse('2026-03-10T12:00:00Z');
  t.equal(formatRemaining('2026-03-10T12:00:22.400Z', now), '23 s', 'rounded up: a rest is never shown as over early');
  t.equal(formatRemaining('2026-03-10T12:04:10Z', now), '4 min 10 s');
  t.equal(formatRemaining('2026-03-10T12:05:00Z', now), '5 min');
  t.equal(formatRemaining('2026-03-10T14:05:00Z', now), '2 h 5 min');
  t.equal(formatRemaining('2026-03-10T12:00:00Z', now), null, 'over');
  t.equal(formatRemaining(null, now), null);
});
