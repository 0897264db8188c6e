#!/usr/bin/env node
// The `gateway` command. It runs the compiled JavaScript in dist/ (built by `npm install` /
// `npm run build`) when that is up to date with src/; otherwise the TypeScript sources through
// tsx's loader, so an edited checkout never runs stale code.
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function compiledIsFresh() {
  try {
    return statSync(join(root, 'dist/.stamp')).mtimeMs >= newestSource(join(root, 'src'));
  } catch {
    return false;
  }
}

let entry;
if (process.env.GATEWAY_FROM_SOURCE !== '1' && compiledIsFresh()) {
  entry = await import('../dist/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  entry = await import('../src/cli/main.ts');
}
await entry.main();
