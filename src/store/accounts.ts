import type { ReadBarrier } from './barrier.js';
import type { Db } from './db.js';

export type Role = 'admin' | 'user';

export interface Account {
  id: string;
  email: string;
  name: string;
  passwordHash: string | null;
  role: Role;
  balanceMicros: number;
  /** Lifetime spend (every charge), and what the account's keys together may spend per `spendPeriod` (null: no limit). */
  spentMicros: number;
  spendLimitMicros: number | null;
  spendPeriod: string | null;
  /** When the current spend period began (0: none yet) and the lifetime spend then. */
  periodStart: number;
  periodBaseMicros: number;
  createdAt: number;
  updatedAt: number;
}

/** An accounts row, as both backends read it. */
export interface AccountRow {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  role: Role;
  balance_micros: number;
  spent_micros: number;
  spend_limit_micros: number | null;
  spend_period: string | null;
  period_start: number;
  period_base_micros: number;
  created_at: number;
  updated_at: number;
}

export const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  email: row.email,
  name: row.name,
  passwordHash: row.password_hash,
  role: row.role,
  balanceMicros: row.balance_micros,
  spentMicros: row.spent_micros,
  spendLimitMicros: row.spend_limit_micros,
  spendPeriod: row.spend_period,
  periodStart: row.period_start,
  periodBaseMicros: row.period_base_micros,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export class AccountsRepo {
  private readonly insertStmt;
  private readonly byIdStmt;
  private readonly byEmailStmt;
  private readonly listStmt;
  private readonly countAdminsStmt;
  private readonly spendLimitStmt;

  constructor(
    db: Db,
    private readonly barrier?: ReadBarrier,
  ) {
    this.insertStmt = db.prepare(
      `INSERT INTO accounts (id, email, name, password_hash, role, balance_micros, created_at, updated_at)
       VALUES (@id, @email, @name, @password_hash, @role, 0, @now, @now)`,
    );
    this.byIdStmt = db.prepare('SELECT * FROM accounts WHERE id = ?');
    this.byEmailStmt = db.prepare('SELECT * FROM accounts WHERE email = ?');
    this.listStmt = db.prepare('SELECT * FROM accounts ORDER BY created_at, id LIMIT ? OFFSET ?');
    this.countAdminsStmt = db.prepare("SELECT count(*) AS n FROM accounts WHERE role = 'admin'");
    // A changed period starts over at the next call (period_start 0); a changed limit keeps
    // what the period has spent (SET reads the row as it was: the old spend_period).
    this.spendLimitStmt = db.prepare(
      'UPDATE accounts SET spend_limit_micros = @limit, spend_period = @period, period_start = CASE WHEN spend_period IS @period THEN period_start ELSE 0 END, updated_at = @now WHERE id = @id',
    );
  }

  /** Inserts an account; throws SQLITE_CONSTRAINT_UNIQUE when the email is taken. */
  insert(input: { id: string; email: string; name: string; passwordHash: string | null; role: Role; now: number }): Account {
    this.insertStmt.run({ id: input.id, email: input.email, name: input.name, password_hash: input.passwordHash, role: input.role, now: input.now });
    return this.byId(input.id) as Account;
  }

  byId(id: string): Account | undefined {
    this.barrier?.pass();
    const row = this.byIdStmt.get(id) as AccountRow | undefined;
    return row && toAccount(row);
  }

  byEmail(email: string): Account | undefined {
    this.barrier?.pass();
    const row = this.byEmailStmt.get(email) as AccountRow | undefined;
    return row && toAccount(row);
  }

  list(limit: number, offset: number): Account[] {
    this.barrier?.pass();
    return (this.listStmt.all(limit, offset) as AccountRow[]).map(toAccount);
  }

  setSpendLimit(id: string, limitMicros: number | null, period: string | null, now: number): Account | undefined {
    this.spendLimitStmt.run({ limit: limitMicros, period, now, id });
    return this.byId(id);
  }

  countAdmins(): number {
    return (this.countAdminsStmt.get() as { n: number }).n;
  }
}

export { isUniqueViolation } from './errors.js';
