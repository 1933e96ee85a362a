-- 0001: the whole schema of the credit ledger. Frozen once merged: changes go in a new file.
-- Amounts are integers: credits in micro-credits (_micros), prices in micro-USD per million
-- tokens (_micros_per_m), costs in micro-USD plus a pico-USD remainder. Times are Unix epoch milliseconds (_ms).

CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at_ms INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  key_hash TEXT NOT NULL UNIQUE,
  created_at_ms INTEGER NOT NULL,
  revoked_at_ms INTEGER
);

CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  external_id TEXT NOT NULL,
  name TEXT NOT NULL,
  email TEXT NOT NULL,
  metadata TEXT,
  balance_micros INTEGER NOT NULL DEFAULT 0
    CHECK (balance_micros >= 0 AND balance_micros <= 9000000000000000),
  -- Unspent credits of the latest grant of a non-accumulating plan (docs/api.md#plans-and-grants), spent first.
  plan_bucket_micros INTEGER NOT NULL DEFAULT 0 CHECK (plan_bucket_micros >= 0),
  plan_bucket_account_plan_id TEXT,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  UNIQUE (project_id, external_id)
);
CREATE INDEX accounts_project ON accounts (project_id, created_at_ms, id);

CREATE TABLE reservations (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  account_id TEXT NOT NULL REFERENCES accounts (id),
  amount_micros INTEGER NOT NULL CHECK (amount_micros > 0),
  status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'cancelled', 'expired')),
  metadata TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  settled_at_ms INTEGER,
  actual_micros INTEGER,
  transaction_id TEXT
);
CREATE INDEX reservations_account ON reservations (account_id, status, expires_at_ms);
CREATE INDEX reservations_list ON reservations (account_id, created_at_ms, id);
CREATE INDEX reservations_pending ON reservations (status, expires_at_ms);

-- seq is the rowid: ascending in insertion order, since ledger rows are never deleted.
CREATE TABLE transactions (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects (id),
  account_id TEXT NOT NULL REFERENCES accounts (id),
  type TEXT NOT NULL CHECK (type IN ('credit', 'debit')),
  amount_micros INTEGER NOT NULL CHECK (amount_micros >= 0),
  balance_after_micros INTEGER NOT NULL
    CHECK (balance_after_micros >= 0 AND balance_after_micros <= 9000000000000000),
  description TEXT NOT NULL,
  metadata TEXT NOT NULL,
  -- What made the entry: add, deduct, manual, reservation, plan_grant, plan_expiry.
  source TEXT NOT NULL,
  reservation_id TEXT,
  account_plan_id TEXT,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX transactions_account ON transactions (account_id, created_at_ms, seq);
CREATE INDEX transactions_project ON transactions (project_id, created_at_ms, seq);

-- The ledger is append-only: a correction is a new transaction (docs/api.md#balance-adjustments-and-transactions).
CREATE TRIGGER transactions_no_update BEFORE UPDATE ON transactions
BEGIN
  SELECT RAISE(ABORT, 'transactions are immutable');
END;
CREATE TRIGGER transactions_no_delete BEFORE DELETE ON transactions
BEGIN
  SELECT RAISE(ABORT, 'transactions are immutable');
END;

CREATE TABLE plans (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  credits_micros INTEGER NOT NULL CHECK (credits_micros > 0),
  price_micros INTEGER NOT NULL CHECK (price_micros >= 0),
  billing_period TEXT NOT NULL,
  interval TEXT NOT NULL CHECK (interval IN ('1d', 'week', 'month')),
  occurrences INTEGER CHECK (occurrences IS NULL OR occurrences > 0),
  accumulate INTEGER NOT NULL CHECK (accumulate IN (0, 1)),
  is_active INTEGER NOT NULL CHECK (is_active IN (0, 1)),
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE INDEX plans_project ON plans (project_id, created_at_ms, id);

CREATE TABLE account_plans (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  account_id TEXT NOT NULL REFERENCES accounts (id),
  plan_id TEXT NOT NULL REFERENCES plans (id),
  active INTEGER NOT NULL CHECK (active IN (0, 1)),
  start_mode TEXT NOT NULL CHECK (start_mode IN ('immediate', 'next_interval')),
  started_at_ms INTEGER NOT NULL,
  -- Grant k (0-based) is due at anchor + k intervals (months clamped from the anchor).
  anchor_at_ms INTEGER NOT NULL,
  grants_made INTEGER NOT NULL DEFAULT 0,
  next_grant_at_ms INTEGER,
  expires_at_ms INTEGER,
  cancelled_at_ms INTEGER,
  ended_at_ms INTEGER,
  end_reason TEXT,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX account_plans_account ON account_plans (account_id, created_at_ms, id);
CREATE INDEX account_plans_due ON account_plans (active, next_grant_at_ms);
CREATE INDEX account_plans_expiring ON account_plans (active, expires_at_ms);
-- At most one active assignment per account (docs/api.md#endpoints).
CREATE UNIQUE INDEX account_plans_one_active ON account_plans (account_id) WHERE active = 1;

-- One row per granted period: the database refuses a second grant of the same period.
CREATE TABLE plan_grants (
  account_plan_id TEXT NOT NULL REFERENCES account_plans (id),
  period_index INTEGER NOT NULL,
  due_at_ms INTEGER NOT NULL,
  transaction_id TEXT NOT NULL,
  granted_at_ms INTEGER NOT NULL,
  PRIMARY KEY (account_plan_id, period_index)
);

CREATE TABLE models (
  model_id TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  display_name TEXT NOT NULL,
  model_type TEXT NOT NULL,
  tier TEXT NOT NULL,
  input_micros_per_m INTEGER NOT NULL CHECK (input_micros_per_m >= 0),
  output_micros_per_m INTEGER NOT NULL CHECK (output_micros_per_m >= 0),
  cached_micros_per_m INTEGER CHECK (cached_micros_per_m IS NULL OR cached_micros_per_m >= 0),
  context_window INTEGER NOT NULL,
  source TEXT NOT NULL,
  prices_as_of TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE INDEX models_provider ON models (provider, model_id);

CREATE TABLE usage_records (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects (id),
  account_id TEXT REFERENCES accounts (id),
  context TEXT NOT NULL CHECK (context IN ('customer', 'system')),
  model_id TEXT NOT NULL,
  usage_type TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
  cached_tokens INTEGER NOT NULL CHECK (cached_tokens >= 0 AND cached_tokens <= input_tokens),
  transaction_id TEXT,
  -- The prices the record was costed at: a later price change never rewrites history.
  input_micros_per_m INTEGER NOT NULL,
  output_micros_per_m INTEGER NOT NULL,
  cached_micros_per_m INTEGER,
  -- The cost in pico-USD, split so that every value and every SUM stays exact in 64 bits and in
  -- a JS number: cost = cost_micro_usd × 10^6 + cost_pico_rem pico-USD.
  cost_micro_usd INTEGER NOT NULL CHECK (cost_micro_usd >= 0),
  cost_pico_rem INTEGER NOT NULL CHECK (cost_pico_rem >= 0 AND cost_pico_rem < 1000000),
  metadata TEXT,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX usage_project ON usage_records (project_id, created_at_ms, seq);
CREATE INDEX usage_account ON usage_records (account_id, created_at_ms, seq);
CREATE INDEX usage_transaction ON usage_records (transaction_id);

CREATE TABLE idempotency_keys (
  project_id TEXT NOT NULL REFERENCES projects (id),
  idempotency_key TEXT NOT NULL,
  request_path TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  response_status INTEGER NOT NULL,
  response_body TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, idempotency_key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at_ms);
