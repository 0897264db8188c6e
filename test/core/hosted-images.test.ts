import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { HostedImages } from '../../src/core/gateway/hosted-images.js';
import { tempDir } from '../support/gateway.js';

t.test('hosted images: unguessable names, served until they expire, then swept', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const store = new HostedImages(join(dir.path, 'gateway.db'), pino({ level: 'silent' }), 200);
  t.teardown(() => store.close());
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
  const name = await store.put(png, 'image/png');
  t.match(name, /^[0-9a-z]+-[A-Za-z0-9_-]{43}\.png$/);
  t.not(await store.put(png, 'image/png'), name, 'a new name for every image');
  t.match(await store.get(name), { data: png, contentType: 'image/png' });
  t.equal(await store.get(name.replace(/-[^.]+/, `-${'A'.repeat(43)}`)), undefined, 'a guessed name finds nothing');
  t.equal(await store.get('../gateway.db'), undefined, 'only well-formed names are read');
  const jpeg = await store.put(png, 'image/jpeg');
  t.match(await store.get(jpeg), { contentType: 'image/jpeg' });
  writeFileSync(join(store.dir, 'operator-notes.txt'), 'x');
  t.equal(store.sweep(), 0, 'nothing live is swept, and nothing that is not a hosted image');
  await new Promise((resolve) => setTimeout(resolve, 250));
  t.equal(await store.get(name), undefined, 'expired: no longer served');
  store.sweep(); // the sweeper's timer (every ttl here) may have been first
  t.same(readdirSync(store.dir), ['operator-notes.txt'], 'expired images swept; other files left alone');
});
