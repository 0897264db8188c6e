import type { App } from '../../app.js';
import { errors } from '../../core/errors.js';
import type { Account } from '../../store/accounts.js';
import type { KeyPrincipal } from '../guards.js';

/**
 * What an `akm-` key may touch: an admin's key every account, a user's key only its own
 * account. Other accounts' resources answer 404, so their existence is not revealed.
 */
export function requireAdmin(principal: KeyPrincipal): void {
  if (principal.account.role !== 'admin') throw errors.adminOnly();
}

export function canSee(principal: KeyPrincipal, accountId: string): boolean {
  return principal.account.role === 'admin' || principal.account.id === accountId;
}

/** An account by id, email or `me`, if the principal may see it. */
export async function scopedAccount(app: App, principal: KeyPrincipal, ref: string): Promise<Account> {
  if (ref === 'me') return principal.account;
  const account = await app.accounts.resolve(ref);
  if (!canSee(principal, account.id)) throw errors.notFound('account', ref);
  return account;
}
