import { errors } from '../errors.js';
import { newId } from '../keys.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { PasswordPool } from '../auth/password-pool.js';
import { FailureThrottle } from '../auth/throttle.js';
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
  now?: () => number;
}

/** Accounts: creation, password login (throttled), lookup by id or email. */
export class AccountService {
  private readonly byEmailFailures: FailureThrottle;
  private readonly byClientFailures: FailureThrottle;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly options: AccountServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
    const windowMs = options.login.windowSeconds * 1000;
    this.byEmailFailures = new FailureThrottle(options.login.maxFailures, windowMs, this.now);
    // A client guessing across many emails is cut off too, at a higher count.
    this.byClientFailures = new FailureThrottle(options.login.maxFailures * 4, windowMs, this.now);
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
    const subject = email.toLowerCase();
    const wait = Math.max(this.byEmailFailures.retryAfter(subject), this.byClientFailures.retryAfter(client));
    if (wait > 0) throw errors.loginThrottled(wait);
    const account = await this.store.accounts.byEmail(subject);
    const ok = await verifyPassword(password, account?.passwordHash, this.options.bcryptRounds, this.options.passwords);
    if (!ok || !account) {
      this.byEmailFailures.fail(subject);
      this.byClientFailures.fail(client);
      throw errors.badCredentials();
    }
    this.byEmailFailures.succeed(subject);
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

  async hasAdmin(): Promise<boolean> {
    return (await this.store.accounts.countAdmins()) > 0;
  }
}
