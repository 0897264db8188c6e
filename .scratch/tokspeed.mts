import { countTextTokens } from '../src/core/tokens.ts';
import { readFileSync } from 'node:fs';
const prose = readFileSync('/work/main/README.md','utf8').repeat(20).slice(0, 400_000);
const code = readFileSync('/work/main/src/core/gateway/chat.ts','utf8').repeat(40).slice(0, 400_000);
await countTextTokens('warm up');
for (const [name, text] of [['prose', prose], ['code', code]] as const) {
  // full count: bypass MAX_COUNTED by chunks of 60k
  let t0 = performance.now(); let n = 0;
  for (let i = 0; i < text.length; i += 60_000) n += await countTextTokens(text.slice(i, i + 60_000));
  const ms = performance.now() - t0;
  console.log(name, text.length, 'chars', n, 'tokens', ms.toFixed(0), 'ms', (text.length / 1e3 / ms).toFixed(2), 'MB/s', (text.length/n).toFixed(2), 'chars/token');
}
