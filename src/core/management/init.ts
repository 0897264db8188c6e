import { errors, GatewayError } from '../errors.js';
import { generateKey, hashKey, maskKey, newId } from '../keys.js';
import { hashPassword } from '../auth/passwords.js';
import { isUniqueViolation, type Account } from '../../store/accounts.js';
import type { KeyRecord } from '../../store/keys.js';
import type { Store } from '../../store/types.js';

export interface InitResult {
  account: Account;
  key: KeyRecord;
  secret: string;
}

/**
 * `gateway init`: the first admin account and its first `akm-` key, in one transaction that
 * refuses when any admin exists (so a second init cannot mint another admin).
 */
export async function initializeFirstAdmin(store: Store, input: { email: string; name: string; password: string; bcryptRounds: number }): Promise<InitResult> {
  const passwordHash = await hashPassword(input.password, input.bcryptRounds);
  const now = Date.now();
  const secret = generateKey('management');
  try {
    const accountId = newId('acc');
    const created = await store.createFirstAdmin(
      { id: accountId, email: input.email, name: input.name, passwordHash, role: 'admin', now },
      { id: newId('mk'), accountId, name: 'init', keyHash: hashKey(secret), maskedKey: maskKey(secret), expiresAt: null, now },
    );
    if (!created) {
      throw new GatewayError({
        status: 409,
        type: 'conflict_error',
        reason: 'already_initialized',
        message: 'an admin account already exists: use `gateway accounts create` with an admin key instead',
      });
    }
    return { ...created, secret };
  } catch (error) {
    if (isUniqueViolation(error)) throw errors.emailTaken(input.email);
    throw error;
  }
}
