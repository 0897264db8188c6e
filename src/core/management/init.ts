import { errors, GatewayError } from '../errors.js';
import { generateKey, hashKey, maskKey, newId } from '../keys.js';
import { hashPassword } from '../auth/passwords.js';
import { isUniqueViolation, type Account } from '../../store/accounts.js';
import type { KeyRecord } from '../../store/keys.js';
import type { Store } from '../../store/store.js';

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
    return store.transaction(() => {
      if (store.accounts.countAdmins() > 0) {
        throw new GatewayError({
          status: 409,
          type: 'conflict_error',
          reason: 'already_initialized',
          message: 'an admin account already exists: use `gateway accounts create` with an admin key instead',
        });
      }
      const account = store.accounts.insert({ id: newId('acc'), email: input.email, name: input.name, passwordHash, role: 'admin', now });
      const key = store.managementKeys.insert({
        id: newId('mk'),
        accountId: account.id,
        name: 'init',
        keyHash: hashKey(secret),
        maskedKey: maskKey(secret),
        expiresAt: null,
        now,
      });
      return { account, key, secret };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw errors.emailTaken(input.email);
    throw error;
  }
}
