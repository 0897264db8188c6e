/**
 * The PostgreSQL schema (issue 16: the shared store for daemons on several hosts), versioned
 * on its own: PostgreSQL's version 1 holds what SQLite's migrations 1 to 6 built. The same
 * invariants as SQLite's, enforced by the database: money in `bigint` µINR, the ledger
 * append-only (triggers), one charge per request id and one top-up per reference (unique
 * indexes), e-mails unique whatever their case.
 *
 * Times are `bigint` milliseconds since the epoch, as in SQLite, so that rows copy across
 * unchanged (`gateway db migrate`) and the repositories share their mapping.
 */

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'accounts, keys, wallet ledger, usage, sessions ended by logout (SQLite migrations 1-6)',
    sql: `
CREATE TABLE accounts (
  id             text PRIMARY KEY,
  email          text NOT NULL,
  name           text NOT NULL,
  password_hash  text,
  role           text NOT NULL CHECK (role IN ('admin', 'user')),
  balance_micros bigint NOT NULL DEFAULT 0,
  created_at     bigint NOT NULL,
  updated_at     bigint NOT NULL
);
-- SQLite's COLLATE NOCASE: one account per e-mail whatever its case.
CREATE UNIQUE INDEX accounts_email ON accounts (lower(email));

CREATE TABLE api_keys (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES accounts(id),
  name          text NOT NULL,
  key_hash      text NOT NULL UNIQUE,
  masked_key    text NOT NULL,
  rate_limit    integer NOT NULL CHECK (rate_limit BETWEEN 1 AND 10000),
  budget_micros bigint CHECK (budget_micros IS NULL OR budget_micros > 0),
  spent_micros  bigint NOT NULL DEFAULT 0 CHECK (spent_micros >= 0),
  expires_at    bigint,
  revoked_at    bigint,
  last_used_at  bigint,
  created_at    bigint NOT NULL,
  cache         boolean NOT NULL DEFAULT true
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

CREATE TABLE management_keys (
  id           text PRIMARY KEY,
  account_id   text NOT NULL REFERENCES accounts(id),
  name         text NOT NULL,
  key_hash     text NOT NULL UNIQUE,
  masked_key   text NOT NULL,
  expires_at   bigint,
  revoked_at   bigint,
  last_used_at bigint,
  created_at   bigint NOT NULL
);
CREATE INDEX management_keys_by_account ON management_keys (account_id, created_at);

-- Append-only: top-ups and refunds are positive, charges negative; balance_after is the
-- account balance once the entry applied, written in the same transaction as the balance.
CREATE TABLE ledger (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id           text NOT NULL REFERENCES accounts(id),
  kind                 text NOT NULL CHECK (kind IN ('topup', 'charge', 'refund')),
  amount_micros        bigint NOT NULL,
  balance_after_micros bigint NOT NULL,
  reference            text,
  request_id           text,
  api_key_id           text,
  note                 text,
  created_by           text,
  created_at           bigint NOT NULL,
  CHECK ((kind = 'charge' AND amount_micros <= 0) OR (kind <> 'charge' AND amount_micros > 0))
);
CREATE INDEX ledger_by_account ON ledger (account_id, id);
-- An idempotency reference applies once per account and kind.
CREATE UNIQUE INDEX ledger_reference ON ledger (account_id, kind, reference) WHERE reference IS NOT NULL;
-- A request is charged at most once.
CREATE UNIQUE INDEX ledger_charge_request ON ledger (request_id) WHERE kind = 'charge' AND request_id IS NOT NULL;
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger is append-only' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER ledger_no_update BEFORE UPDATE OR DELETE ON ledger FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- One row per inference call, written when the call settles.
CREATE TABLE usage (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  request_id         text NOT NULL UNIQUE,
  account_id         text NOT NULL REFERENCES accounts(id),
  api_key_id         text,
  model              text NOT NULL,
  provider           text NOT NULL,
  endpoint           text NOT NULL,
  stream             boolean NOT NULL DEFAULT false,
  input_tokens       bigint NOT NULL DEFAULT 0,
  output_tokens      bigint NOT NULL DEFAULT 0,
  cache_read_tokens  bigint NOT NULL DEFAULT 0,
  cache_write_tokens bigint NOT NULL DEFAULT 0,
  unit               text NOT NULL DEFAULT 'tokens' CHECK (unit IN ('tokens', 'characters', 'seconds', 'images')),
  units              bigint NOT NULL DEFAULT 0,
  cost_micros        bigint NOT NULL DEFAULT 0,
  uncharged_micros   bigint NOT NULL DEFAULT 0,
  status             integer NOT NULL,
  error_type         text,
  latency_ms         integer NOT NULL,
  created_at         bigint NOT NULL,
  cache              text CHECK (cache IN ('exact', 'semantic', 'miss', 'bypass')),
  cache_similarity   double precision,
  cache_saved_micros bigint NOT NULL DEFAULT 0
);
CREATE INDEX usage_by_account ON usage (account_id, created_at);
CREATE INDEX usage_by_time ON usage (created_at);

-- A logged-out session's token id stays refused until the token would have expired.
CREATE TABLE session_revocations (
  jti        text PRIMARY KEY,
  account_id text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX session_revocations_by_expiry ON session_revocations (expires_at);
`,
  },
];
