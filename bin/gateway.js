#!/usr/bin/env node
// The `gateway` command. TypeScript sources run through tsx's loader, so there is no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main();
