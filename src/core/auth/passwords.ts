import bcrypt from 'bcryptjs';

/** bcrypt (bcryptjs: pure JS, async so hashing yields to the event loop). */
export function hashPassword(password: string, rounds: number): Promise<string> {
  return bcrypt.hash(password, rounds);
}

const dummyHashes = new Map<number, Promise<string>>();

/**
 * Checks a password against a hash; without a hash (unknown email, account without a
 * password) it still spends one bcrypt comparison, so timing does not reveal which emails exist.
 */
export async function verifyPassword(password: string, hash: string | null | undefined, rounds: number): Promise<boolean> {
  if (hash) return bcrypt.compare(password, hash);
  let dummy = dummyHashes.get(rounds);
  if (!dummy) {
    dummy = bcrypt.hash('not-a-password', rounds);
    dummyHashes.set(rounds, dummy);
  }
  await bcrypt.compare(password, await dummy);
  return false;
}
