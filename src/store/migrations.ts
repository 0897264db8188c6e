/**
 * Versioned schema migrations, applied in order at start inside one transaction each.
 * Never edit a released migration: add a new one. Times are integer milliseconds since the
 * epoch; money is integer µINR.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, keys, wallet ledger, usage',
    sql: `
CREATE TABLE accounts (
  id             TEXT PRIMARY KEY,
  email          TEXT NOT NULL UNIQUE COLLATE NOCASE,
  name           TEXT NOT NULL,
  password_hash  TEXT,
  role           TEXT NOT NULL CHECK (role IN ('admin', 'user')),
  balance_micros INTEGER NOT NULL DEFAULT 0,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
  id            TEXT PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  name          TEXT NOT NULL,
  key_hash      TEXT NOT NULL UNIQUE,
  masked_key    TEXT NOT NULL,
  rate_limit    INTEGER NOT NULL CHECK (rate_limit BETWEEN 1 AND 10000),
  budget_micros INTEGER CHECK (budget_micros IS NULL OR budget_micros > 0),
  spent_micros  INTEGER NOT NULL DEFAULT 0 CHECK (spent_micros >= 0),
  expires_at    INTEGER,
  revoked_at    INTEGER,
  last_used_at  INTEGER,
  created_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX api_keys_by_account ON api_keys(account_id, created_at);

CREATE TABLE management_keys (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  name         TEXT NOT NULL,
  key_hash     TEXT NOT NULL UNIQUE,
  masked_key   TEXT NOT NULL,
  expires_at   INTEGER,
  revoked_at   INTEGER,
  last_used_at INTEGER,
  created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX management_keys_by_account ON management_keys(account_id, created_at);

-- Append-only: top-ups and refunds are positive, charges negative; balance_after is the
-- account balance once the entry applied, written in the same transaction as the balance.
CREATE TABLE ledger (
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id           TEXT NOT NULL REFERENCES accounts(id),
  kind                 TEXT NOT NULL CHECK (kind IN ('topup', 'charge', 'refund')),
  amount_micros        INTEGER NOT NULL,
  balance_after_micros INTEGER NOT NULL,
  reference            TEXT,
  request_id           TEXT,
  api_key_id           TEXT,
  note                 TEXT,
  created_by           TEXT,
  created_at           INTEGER NOT NULL,
  CHECK ((kind = 'charge' AND amount_micros <= 0) OR (kind <> 'charge' AND amount_micros > 0))
) STRICT;
CREATE INDEX ledger_by_account ON ledger(account_id, id);
-- An idempotency reference applies once per account and kind.
CREATE UNIQUE INDEX ledger_reference ON ledger(account_id, kind, reference) WHERE reference IS NOT NULL;
-- A request is charged at most once.
CREATE UNIQUE INDEX ledger_charge_request ON ledger(request_id) WHERE kind = 'charge' AND request_id IS NOT NULL;
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;

-- One row per inference call, written when the call settles.
CREATE TABLE usage (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id         TEXT NOT NULL UNIQUE,
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  api_key_id         TEXT,
  model              TEXT NOT NULL,
  provider           TEXT NOT NULL,
  endpoint           TEXT NOT NULL,
  stream             INTEGER NOT NULL DEFAULT 0,
  input_tokens       INTEGER NOT NULL DEFAULT 0,
  output_tokens      INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost_micros        INTEGER NOT NULL DEFAULT 0,
  status             INTEGER NOT NULL,
  error_type         TEXT,
  latency_ms         INTEGER NOT NULL,
  created_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX usage_by_account ON usage(account_id, created_at);
CREATE INDEX usage_by_key ON usage(api_key_id, created_at);
CREATE INDEX usage_by_model ON usage(model, created_at);
CREATE INDEX usage_by_time ON usage(created_at);
`,
  },
  {
    version: 2,
    name: 'usage: drop the per-key and per-model indexes',
    // Each index on usage is one more B-tree insert and one more page written per settled call
    // (the hot path). A key filter is answered through usage_by_account (a key belongs to one
    // account, see UsageRepo.list) and a model filter by walking the rows newest first.
    sql: `
DROP INDEX usage_by_key;
DROP INDEX usage_by_model;
`,
  },
  {
    version: 3,
    name: 'usage: what a call cost beyond its hold and was not charged',
    // A call's charge is capped at its hold (no wallet or budget is ever overspent); when the
    // provider reports more usage than the hold's prompt bound allowed, the difference is kept
    // here, so an operator can count and reconcile such calls.
    sql: `
ALTER TABLE usage ADD COLUMN uncharged_micros INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 4,
    name: 'usage: the unit a call is billed in and how many',
    // Media calls are billed in characters (speech), seconds (transcription) or images; chat
    // and embeddings in tokens (units = input + output tokens, as rows before this had).
    sql: `
ALTER TABLE usage ADD COLUMN unit TEXT NOT NULL DEFAULT 'tokens' CHECK (unit IN ('tokens', 'characters', 'seconds', 'images'));
ALTER TABLE usage ADD COLUMN units INTEGER NOT NULL DEFAULT 0;
UPDATE usage SET units = input_tokens + output_tokens;
`,
  },
  {
    version: 5,
    name: 'sessions ended by logout',
    // A logged-out session's token id stays refused until the token would have expired.
    sql: `
CREATE TABLE session_revocations (
  jti        TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX session_revocations_by_expiry ON session_revocations(expires_at);
`,
  },
  {
    version: 6,
    name: 'response cache: a key may opt out; usage records the cache outcome and what a hit saved',
    sql: `
ALTER TABLE api_keys ADD COLUMN cache INTEGER NOT NULL DEFAULT 1 CHECK (cache IN (0, 1));
ALTER TABLE usage ADD COLUMN cache TEXT CHECK (cache IN ('exact', 'semantic', 'miss', 'bypass'));
ALTER TABLE usage ADD COLUMN cache_similarity REAL;
ALTER TABLE usage ADD COLUMN cache_saved_micros INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 7,
    name: 'usage: the deployment that served a call and how many upstream attempts it made',
    // Routing (issue 26): a call may be retried and fall back; its one row records where it
    // was served (`provider` is then the deployment's provider entry) and the attempts.
    sql: `
ALTER TABLE usage ADD COLUMN deployment TEXT;
ALTER TABLE usage ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1 CHECK (attempts >= 0);
`,
  },
  {
    version: 8,
    name: 'usage: the alias a client named the model by',
    // Model aliases (issue 27): `model` stays the catalog model billed; this is the name the
    // client used (claude-haiku-5-5), null when it named the model itself.
    sql: `
ALTER TABLE usage ADD COLUMN requested_model TEXT;
`,
  },
  {
    version: 9,
    name: 'api keys: the models a key may call and the addresses it may be used from',
    // Governance (issue 30): JSON arrays of strings; NULL (or []) for every model, anywhere.
    sql: `
ALTER TABLE api_keys ADD COLUMN models TEXT;
ALTER TABLE api_keys ADD COLUMN allowed_ips TEXT;
`,
  },
  {
    version: 10,
    name: 'api keys: calls in flight, tokens per minute, budgets that renew; accounts: spend limits',
    // Governance (issue 30). A key's (or account's) spend in its current period is its
    // lifetime spend minus period_base_micros, the spend when the period began (period_start,
    // ms; written once per period by the first admission that sees the new period), so the
    // charge path adds to one counter as before. Accounts count their lifetime spend from now
    // on (charges add to it), starting from the ledger's charges so far.
    sql: `
ALTER TABLE api_keys ADD COLUMN max_parallel INTEGER CHECK (max_parallel IS NULL OR max_parallel BETWEEN 1 AND 10000);
ALTER TABLE api_keys ADD COLUMN tpm_limit INTEGER CHECK (tpm_limit IS NULL OR tpm_limit > 0);
ALTER TABLE api_keys ADD COLUMN budget_period TEXT;
ALTER TABLE api_keys ADD COLUMN period_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN period_base_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN spent_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN spend_limit_micros INTEGER CHECK (spend_limit_micros IS NULL OR spend_limit_micros > 0);
ALTER TABLE accounts ADD COLUMN spend_period TEXT;
ALTER TABLE accounts ADD COLUMN period_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN period_base_micros INTEGER NOT NULL DEFAULT 0;
UPDATE accounts SET spent_micros = coalesce((SELECT -sum(amount_micros) FROM ledger WHERE ledger.account_id = accounts.id AND kind = 'charge'), 0);
`,
  },
  {
    version: 11,
    name: 'alerts: raised once per event, subject and period',
    sql: `
CREATE TABLE alerts (
  id         TEXT PRIMARY KEY,
  event      TEXT NOT NULL,
  subject    TEXT NOT NULL,
  period     TEXT NOT NULL,
  account_id TEXT,
  payload    TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  delivery   TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0,
  last_error TEXT
) STRICT;
CREATE UNIQUE INDEX alerts_once ON alerts(event, subject, period);
CREATE INDEX alerts_by_time ON alerts(created_at);
`,
  },
];
