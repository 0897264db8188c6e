import { createHash } from 'node:crypto';
import t from 'tap';
import { generateKey, hashKey, isWellFormedKey, keyKindOf, maskKey, newId } from '../../src/core/keys.js';
import { parseIsoDate } from '../../src/core/time.js';

t.test('key formats', async (t) => {
  const sk = generateKey('api');
  const akm = generateKey('management');
  t.match(sk, /^sk-[0-9a-f]{64}$/);
  t.match(akm, /^akm-[0-9a-f]{64}$/);
  t.ok(isWellFormedKey('api', sk) && isWellFormedKey('management', akm));
  t.notOk(isWellFormedKey('api', akm), 'an akm- key is not an sk- key');
  t.notOk(isWellFormedKey('api', sk.toUpperCase().replace('SK-', 'sk-')), 'uppercase hex is not the format');
  t.notOk(isWellFormedKey('api', `${sk}0`), 'too long');
  t.equal(keyKindOf(sk), 'api');
  t.equal(keyKindOf(akm), 'management');
  t.equal(keyKindOf('Bearer-ish'), null);
  const many = new Set(Array.from({ length: 1000 }, () => generateKey('api')));
  t.equal(many.size, 1000, 'no repeats in 1000 keys');
});

t.test('hash and mask', async (t) => {
  const sk = `sk-${'0123456789abcdef'.repeat(4)}`;
  t.equal(hashKey(sk), createHash('sha256').update(sk).digest('hex'), 'SHA-256 hex of the whole key');
  t.equal(maskKey(sk), 'sk-0123…cdef');
  t.equal(maskKey(`akm-${'f'.repeat(60)}1234`), 'akm-ffff…1234');
  t.notMatch(maskKey(sk), /456789ab/, 'the mask keeps 8 of 64 hex digits');
  t.match(newId('acc'), /^acc_[A-Za-z0-9_-]{12}$/);
});

t.test('ISO dates', async (t) => {
  t.same(parseIsoDate('2030-01-01'), { ok: true, ms: Date.UTC(2030, 0, 1) }, 'a date is midnight UTC');
  t.same(parseIsoDate('2030-01-01T10:00:00Z'), { ok: true, ms: Date.UTC(2030, 0, 1, 10) });
  t.same(parseIsoDate('2030-01-01T10:00:00+05:30'), { ok: true, ms: Date.UTC(2030, 0, 1, 4, 30) });
  t.same(parseIsoDate('2030-01-01T10:00:00.123+0530'), { ok: true, ms: Date.UTC(2030, 0, 1, 4, 30, 0, 123) });
  for (const bad of ['2030-02-30', '2030-13-01', '2030-01-01T10:00:00', '2030-01-01T25:00:00Z', 'tomorrow', '01/02/2030', '2030-1-1']) {
    t.equal(parseIsoDate(bad).ok, false, `refuses ${bad}`);
  }
  t.equal(parseIsoDate('2028-02-29').ok, true, 'leap day');
});
