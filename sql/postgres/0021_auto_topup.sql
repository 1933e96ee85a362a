-- Automatic top-up (docs/api.md#automatic-top-up, docs/design.md#automatic-top-up). An
-- account's settings (`auto_topups`) and its attempts (`auto_topup_attempts`), each attempt an
-- off-session PaymentIntent made with the attempt's id as Stripe's Idempotency-Key. At most one
-- attempt per account is pending (the partial unique index). `accounts.auto_topup_threshold_micros`
-- is the threshold while the top-up is enabled, null otherwise: the plain region of the
-- admission rule requires it null, so that every write of such an account takes the general
-- path, where a crossing queues an attempt in the write's own transaction.
ALTER TABLE accounts ADD COLUMN auto_topup_threshold_micros BIGINT;

CREATE TABLE auto_topups (
  account_id TEXT COLLATE "C" PRIMARY KEY REFERENCES accounts (id),
  project_id TEXT COLLATE "C" NOT NULL,
  enabled INTEGER NOT NULL,
  threshold_micros BIGINT NOT NULL CHECK (threshold_micros >= 0),
  amount_micros BIGINT NOT NULL CHECK (amount_micros > 0),
  monthly_limit_micros BIGINT CHECK (monthly_limit_micros > 0),
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  disabled_reason TEXT,
  updated_at_ms BIGINT NOT NULL
);

CREATE TABLE auto_topup_attempts (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL,
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  reason TEXT,
  credits_micros BIGINT NOT NULL CHECK (credits_micros > 0),
  amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
  payment_intent_id TEXT COLLATE "C",
  purchase_id TEXT COLLATE "C",
  created_at_ms BIGINT NOT NULL,
  finished_at_ms BIGINT,
  next_try_at_ms BIGINT NOT NULL,
  first_unanswered_at_ms BIGINT,
  processing_since_ms BIGINT
);
CREATE UNIQUE INDEX auto_topup_attempts_in_flight ON auto_topup_attempts (account_id)
  WHERE status = 'pending';
CREATE INDEX auto_topup_attempts_due ON auto_topup_attempts (next_try_at_ms)
  WHERE status = 'pending';
CREATE INDEX auto_topup_attempts_account ON auto_topup_attempts (account_id, created_at_ms);
CREATE INDEX auto_topup_attempts_payment ON auto_topup_attempts (payment_intent_id)
  WHERE payment_intent_id IS NOT NULL;
