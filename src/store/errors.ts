/**
 * What a store's errors mean, for either backend (SQLite's `SQLITE_*` codes, PostgreSQL's
 * SQLSTATEs and the driver's connection errors): callers outside src/store ask these.
 */

/** A unique index said no: an e-mail taken, a request id already charged, a reference used. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

const PG_CONNECTION_ERRORS = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * The database could not take a write now but may soon: SQLite locked past its timeout, full,
 * I/O; PostgreSQL unreachable, restarting, read-only (failover), out of resources, or a
 * serialization failure or deadlock. Worth a retry; the write was not made.
 */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  if (/^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|NOMEM|PROTOCOL|READONLY)/.test(code)) return true;
  if (PG_CONNECTION_ERRORS.has(code)) return true;
  // SQLSTATE classes 08 (connection), 53 (resources), 57P (operator intervention), 40001/40P01, 25006 (read-only transaction).
  return /^(08|53)[0-9A-Z]{3}$/.test(code) || /^57P0[1-4]$/.test(code) || code === '40001' || code === '40P01' || code === '25006';
}
