import { sharedPasswordPool, type PasswordPool } from './password-pool.js';

/**
 * bcrypt (bcryptjs), run in a pool of worker threads (password-pool.ts) so hashing never
 * stalls the event loop. Each function takes the pool to use; without one, the process's
 * shared pool. A full pool queue fails the call at once with 503 `overloaded`.
 */

export async function hashPassword(password: string, rounds: number, pool: PasswordPool = sharedPasswordPool()): Promise<string> {
  return pool.hash(password, rounds);
}

/** Per pool, per rounds: the hash compared against when there is no real one. */
const dummyHashes = new WeakMap<PasswordPool, Map<number, Promise<string>>>();

function dummyHash(pool: PasswordPool, rounds: number): Promise<string> {
  const byRounds = dummyHashes.get(pool) ?? new Map<number, Promise<string>>();
  dummyHashes.set(pool, byRounds);
  let dummy = byRounds.get(rounds);
  if (!dummy) {
    dummy = pool.hash('not-a-password', rounds);
    byRounds.set(rounds, dummy);
    // Not computed (queue full, shutting down): the next call tries again.
    const attempt = dummy;
    attempt.catch(() => {
      if (byRounds.get(rounds) === attempt) byRounds.delete(rounds);
    });
  }
  return dummy;
}

/**
 * Checks a password against a hash; without a hash (unknown email, account without a
 * password) it still spends one bcrypt comparison, so timing does not reveal which emails exist.
 */
export async function verifyPassword(password: string, hash: string | null | undefined, rounds: number, pool: PasswordPool = sharedPasswordPool()): Promise<boolean> {
  if (hash) return pool.compare(password, hash);
  await pool.compare(password, await dummyHash(pool, rounds));
  return false;
}
