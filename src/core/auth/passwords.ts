import type { default as Bcrypt } from 'bcryptjs';

/**
 * bcrypt (bcryptjs: pure JS, async so hashing yields to the event loop). Loaded on first
 * use: a daemon serving only API keys never hashes a password.
 */

let bcryptModule: Promise<typeof Bcrypt> | undefined;
const loadBcrypt = (): Promise<typeof Bcrypt> => (bcryptModule ??= import('bcryptjs').then((m) => m.default));

export async function hashPassword(password: string, rounds: number): Promise<string> {
  return (await loadBcrypt()).hash(password, rounds);
}

const dummyHashes = new Map<number, Promise<string>>();

/**
 * Checks a password against a hash; without a hash (unknown email, account without a
 * password) it still spends one bcrypt comparison, so timing does not reveal which emails exist.
 */
export async function verifyPassword(password: string, hash: string | null | undefined, rounds: number): Promise<boolean> {
  const bcrypt = await loadBcrypt();
  if (hash) return bcrypt.compare(password, hash);
  let dummy = dummyHashes.get(rounds);
  if (!dummy) {
    dummy = bcrypt.hash('not-a-password', rounds);
    dummyHashes.set(rounds, dummy);
  }
  await bcrypt.compare(password, await dummy);
  return false;
}
