-- 0001 for PostgreSQL: the same schema as sql/0001_init.sql, with the same names, constraints and
-- units, so that one set of queries runs on both engines. Frozen once merged: changes go in a new
-- file, beside the SQLite one of the same number.
--
-- Amounts are BIGINT: credits in micro-credits (_micros), prices in micro-USD per million tokens
-- (_micros_per_m), costs in micro-USD plus a pico-USD remainder (exact, as on SQLite). Times are
-- Unix epoch milliseconds (_ms). Booleans stay 0/1 integers, as on SQLite. Text compares and sorts
-- bytewise (COLLATE "C"), as SQLite's BINARY collation does, whatever the database's locale.
-- Constraint names that the write path recognises (a unique violation it retries) are explicit.

CREATE TABLE projects (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL CONSTRAINT projects_name_key UNIQUE,
  created_at_ms BIGINT NOT NULL
);

CREATE TABLE api_keys (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  key_hash TEXT COLLATE "C" NOT NULL UNIQUE,
  created_at_ms BIGINT NOT NULL,
  revoked_at_ms BIGINT
);

CREATE TABLE accounts (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  external_id TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  email TEXT COLLATE "C" NOT NULL,
  metadata TEXT COLLATE "C",
  balance_micros BIGINT NOT NULL DEFAULT 0
    CHECK (balance_micros >= 0 AND balance_micros <= 9000000000000000),
  -- Unspent credits of the latest grant of a non-accumulating plan, spent first.
  plan_bucket_micros BIGINT NOT NULL DEFAULT 0 CHECK (plan_bucket_micros >= 0),
  plan_bucket_account_plan_id TEXT COLLATE "C",
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  CONSTRAINT accounts_project_external_key UNIQUE (project_id, external_id)
);
CREATE INDEX accounts_project ON accounts (project_id, created_at_ms, id);

CREATE TABLE reservations (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  amount_micros BIGINT NOT NULL CHECK (amount_micros > 0),
  status TEXT COLLATE "C" NOT NULL
    CHECK (status IN ('pending', 'confirmed', 'cancelled', 'expired')),
  metadata TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL,
  expires_at_ms BIGINT NOT NULL,
  settled_at_ms BIGINT,
  actual_micros BIGINT,
  transaction_id TEXT COLLATE "C"
);
CREATE INDEX reservations_account ON reservations (account_id, status, expires_at_ms);
CREATE INDEX reservations_list ON reservations (account_id, created_at_ms, id);
CREATE INDEX reservations_pending ON reservations (status, expires_at_ms);

-- seq ascends in insertion order. Entries of one account are inserted while its row is locked,
-- so within an account seq also ascends in commit order (the balanceAfter chain's order).
CREATE TABLE transactions (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT COLLATE "C" NOT NULL UNIQUE,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  type TEXT COLLATE "C" NOT NULL CHECK (type IN ('credit', 'debit')),
  amount_micros BIGINT NOT NULL CHECK (amount_micros >= 0),
  balance_after_micros BIGINT NOT NULL
    CHECK (balance_after_micros >= 0 AND balance_after_micros <= 9000000000000000),
  description TEXT COLLATE "C" NOT NULL,
  metadata TEXT COLLATE "C" NOT NULL,
  -- What made the entry: add, deduct, manual, reservation, plan_grant, plan_expiry.
  source TEXT COLLATE "C" NOT NULL,
  reservation_id TEXT COLLATE "C",
  account_plan_id TEXT COLLATE "C",
  created_at_ms BIGINT NOT NULL
);
CREATE INDEX transactions_account ON transactions (account_id, created_at_ms, seq);
CREATE INDEX transactions_project ON transactions (project_id, created_at_ms, seq);

-- The ledger is append-only: a correction is a new transaction.
CREATE FUNCTION transactions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'transactions are immutable';
END;
$$;
CREATE TRIGGER transactions_no_update BEFORE UPDATE ON transactions
  FOR EACH ROW EXECUTE FUNCTION transactions_immutable();
CREATE TRIGGER transactions_no_delete BEFORE DELETE ON transactions
  FOR EACH ROW EXECUTE FUNCTION transactions_immutable();
CREATE TRIGGER transactions_no_truncate BEFORE TRUNCATE ON transactions
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_immutable();

CREATE TABLE plans (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  name TEXT COLLATE "C" NOT NULL,
  description TEXT COLLATE "C" NOT NULL,
  credits_micros BIGINT NOT NULL CHECK (credits_micros > 0),
  price_micros BIGINT NOT NULL CHECK (price_micros >= 0),
  billing_period TEXT COLLATE "C" NOT NULL,
  interval TEXT COLLATE "C" NOT NULL CHECK (interval IN ('1d', 'week', 'month')),
  occurrences BIGINT CHECK (occurrences IS NULL OR occurrences > 0),
  accumulate SMALLINT NOT NULL CHECK (accumulate IN (0, 1)),
  is_active SMALLINT NOT NULL CHECK (is_active IN (0, 1)),
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
CREATE INDEX plans_project ON plans (project_id, created_at_ms, id);

CREATE TABLE account_plans (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  plan_id TEXT COLLATE "C" NOT NULL REFERENCES plans (id),
  active SMALLINT NOT NULL CHECK (active IN (0, 1)),
  start_mode TEXT COLLATE "C" NOT NULL CHECK (start_mode IN ('immediate', 'next_interval')),
  started_at_ms BIGINT NOT NULL,
  -- Grant k (0-based) is due at anchor + k intervals (months clamped from the anchor).
  anchor_at_ms BIGINT NOT NULL,
  grants_made BIGINT NOT NULL DEFAULT 0,
  next_grant_at_ms BIGINT,
  expires_at_ms BIGINT,
  cancelled_at_ms BIGINT,
  ended_at_ms BIGINT,
  end_reason TEXT COLLATE "C",
  created_at_ms BIGINT NOT NULL
);
CREATE INDEX account_plans_account ON account_plans (account_id, created_at_ms, id);
CREATE INDEX account_plans_due ON account_plans (active, next_grant_at_ms);
CREATE INDEX account_plans_expiring ON account_plans (active, expires_at_ms);
-- At most one active assignment per account.
CREATE UNIQUE INDEX account_plans_one_active ON account_plans (account_id) WHERE active = 1;

-- One row per granted period: the database refuses a second grant of the same period.
CREATE TABLE plan_grants (
  account_plan_id TEXT COLLATE "C" NOT NULL REFERENCES account_plans (id),
  period_index BIGINT NOT NULL,
  due_at_ms BIGINT NOT NULL,
  transaction_id TEXT COLLATE "C" NOT NULL,
  granted_at_ms BIGINT NOT NULL,
  CONSTRAINT plan_grants_pkey PRIMARY KEY (account_plan_id, period_index)
);

CREATE TABLE models (
  model_id TEXT COLLATE "C" PRIMARY KEY,
  provider TEXT COLLATE "C" NOT NULL,
  display_name TEXT COLLATE "C" NOT NULL,
  model_type TEXT COLLATE "C" NOT NULL,
  tier TEXT COLLATE "C" NOT NULL,
  input_micros_per_m BIGINT NOT NULL CHECK (input_micros_per_m >= 0),
  output_micros_per_m BIGINT NOT NULL CHECK (output_micros_per_m >= 0),
  cached_micros_per_m BIGINT CHECK (cached_micros_per_m IS NULL OR cached_micros_per_m >= 0),
  context_window BIGINT NOT NULL,
  source TEXT COLLATE "C" NOT NULL,
  prices_as_of TEXT COLLATE "C" NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
CREATE INDEX models_provider ON models (provider, model_id);

CREATE TABLE usage_records (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT COLLATE "C" NOT NULL UNIQUE,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  account_id TEXT COLLATE "C" REFERENCES accounts (id),
  context TEXT COLLATE "C" NOT NULL CHECK (context IN ('customer', 'system')),
  model_id TEXT COLLATE "C" NOT NULL,
  usage_type TEXT COLLATE "C" NOT NULL,
  input_tokens BIGINT NOT NULL CHECK (input_tokens >= 0),
  output_tokens BIGINT NOT NULL CHECK (output_tokens >= 0),
  cached_tokens BIGINT NOT NULL CHECK (cached_tokens >= 0 AND cached_tokens <= input_tokens),
  transaction_id TEXT COLLATE "C",
  -- The prices the record was costed at: a later price change never rewrites history.
  input_micros_per_m BIGINT NOT NULL,
  output_micros_per_m BIGINT NOT NULL,
  cached_micros_per_m BIGINT,
  -- The cost in pico-USD, split as on SQLite so that every value and every SUM stays exact:
  -- cost = cost_micro_usd × 10^6 + cost_pico_rem pico-USD.
  cost_micro_usd BIGINT NOT NULL CHECK (cost_micro_usd >= 0),
  cost_pico_rem BIGINT NOT NULL CHECK (cost_pico_rem >= 0 AND cost_pico_rem < 1000000),
  metadata TEXT COLLATE "C",
  created_at_ms BIGINT NOT NULL
);
CREATE INDEX usage_project ON usage_records (project_id, created_at_ms, seq);
CREATE INDEX usage_account ON usage_records (account_id, created_at_ms, seq);
CREATE INDEX usage_transaction ON usage_records (transaction_id);

CREATE TABLE idempotency_keys (
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  idempotency_key TEXT COLLATE "C" NOT NULL,
  request_path TEXT COLLATE "C" NOT NULL,
  request_hash TEXT COLLATE "C" NOT NULL,
  response_status INTEGER NOT NULL,
  response_body TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL,
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (project_id, idempotency_key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at_ms);
