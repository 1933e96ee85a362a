-- Automatic top-up (docs/api.md#automatic-top-up, docs/design.md#automatic-top-up). An
-- account's settings (`auto_topups`) and its attempts (`auto_topup_attempts`), each attempt an
-- off-session PaymentIntent made with the attempt's id as Stripe's Idempotency-Key. At most one
-- attempt per account is pending (the partial unique index). `accounts.auto_topup_threshold_micros`
-- is the threshold while the top-up is enabled, null otherwise: the plain region of the
-- admission rule requires it null, so that every write of such an account takes the general
-- path, where a crossing queues an attempt in the write's own transaction.
ALTER TABLE accounts ADD COLUMN auto_topup_threshold_micros INTEGER;

CREATE TABLE auto_topups (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  project_id TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  threshold_micros INTEGER NOT NULL CHECK (threshold_micros >= 0),
  amount_micros INTEGER NOT NULL CHECK (amount_micros > 0),
  monthly_limit_micros INTEGER CHECK (monthly_limit_micros > 0),
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  disabled_reason TEXT,
  updated_at_ms INTEGER NOT NULL
);

CREATE TABLE auto_topup_attempts (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  reason TEXT,
  credits_micros INTEGER NOT NULL CHECK (credits_micros > 0),
  amount_cents INTEGER NOT NULL CHECK (amount_cents >= 0),
  payment_intent_id TEXT,
  purchase_id TEXT,
  created_at_ms INTEGER NOT NULL,
  finished_at_ms INTEGER,
  next_try_at_ms INTEGER NOT NULL,
  first_unanswered_at_ms INTEGER,
  processing_since_ms INTEGER
);
CREATE UNIQUE INDEX auto_topup_attempts_in_flight ON auto_topup_attempts (account_id)
  WHERE status = 'pending';
CREATE INDEX auto_topup_attempts_due ON auto_topup_attempts (next_try_at_ms)
  WHERE status = 'pending';
CREATE INDEX auto_topup_attempts_account ON auto_topup_attempts (account_id, created_at_ms);
CREATE INDEX auto_topup_attempts_payment ON auto_topup_attempts (payment_intent_id)
  WHERE payment_intent_id IS NOT NULL;
