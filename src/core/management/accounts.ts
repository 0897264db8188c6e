import type { Redis } from 'ioredis';
import { errors } from '../errors.js';
import { newId } from '../keys.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { PasswordPool } from '../auth/password-pool.js';
import { LoginThrottle } from '../auth/login-throttle.js';
import { isUniqueViolation, type Account, type Role } from '../../store/accounts.js';
import type { Store } from '../../store/types.js';

export interface NewAccount {
  email: string;
  name: string;
  /** Without a password the account cannot log in; it is used through keys only. */
  password?: string;
  role: Role;
}

export interface AccountServiceOptions {
  bcryptRounds: number;
  /** Where bcrypt runs (worker threads); default: the process's shared pool. */
  passwords?: PasswordPool;
  login: { maxFailures: number; windowSeconds: number };
  /** Failed logins counted there, for every daemon sharing it; absent: in this daemon's memory. */
  redis?: { client: Redis; prefix: string };
  now?: () => number;
}

/** Accounts: creation, password login (throttled), lookup by id or email. */
export class AccountService {
  private readonly failures: LoginThrottle;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly options: AccountServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.failures = new LoginThrottle({ maxFailures: options.login.maxFailures, windowMs: options.login.windowSeconds * 1000 }, options.redis, this.now);
  }

  async create(input: NewAccount): Promise<Account> {
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password, this.options.bcryptRounds, this.options.passwords);
    try {
      return await this.store.accounts.insert({ id: newId('acc'), email: input.email, name: input.name, passwordHash, role: input.role, now: this.now() });
    } catch (error) {
      if (isUniqueViolation(error)) throw errors.emailTaken(input.email);
      throw error;
    }
  }

  /** Checks email and password; 401 on mismatch, 429 after repeated failures. */
  async login(email: string, password: string, client: string): Promise<Account> {
    await this.failures.check(email, client);
    const account = await this.store.accounts.byEmail(email.toLowerCase());
    const ok = await verifyPassword(password, account?.passwordHash, this.options.bcryptRounds, this.options.passwords);
    if (!ok || !account) {
      await this.failures.failed(email, client);
      throw errors.badCredentials();
    }
    await this.failures.succeeded(email);
    return account;
  }

  async get(id: string): Promise<Account | undefined> {
    return this.store.accounts.byId(id);
  }

  /** An account by id (`acc_…`) or email; 404 when there is none. */
  async resolve(ref: string): Promise<Account> {
    const account = await (ref.includes('@') ? this.store.accounts.byEmail(ref.toLowerCase()) : this.store.accounts.byId(ref));
    if (!account) throw errors.notFound('account', ref);
    return account;
  }

  async list(limit: number, offset: number): Promise<Account[]> {
    return this.store.accounts.list(limit, offset);
  }

  /**
   * Sets what all of an account's keys together may spend per period (issue 30): the fields
   * given change, the others stay; a limit of null removes it. Its period starts over.
   */
  async setSpendLimit(account: Account, change: { limitMicros?: number | null; period?: string | null }): Promise<Account> {
    const limit = change.limitMicros !== undefined ? change.limitMicros : account.spendLimitMicros;
    const period = change.period !== undefined ? change.period : account.spendPeriod;
    if (limit === null && change.period !== undefined && change.period !== null) throw errors.invalidField('spend_period', 'needs a spend limit: set spend_limit too');
    const updated = await this.store.accounts.setSpendLimit(account.id, limit, limit === null ? null : period, Date.now());
    if (!updated) throw errors.notFound('account', account.id);
    return updated;
  }

  async hasAdmin(): Promise<boolean> {
    return (await this.store.accounts.countAdmins()) > 0;
  }
}
