-- Credits sold through Stripe (docs/api.md#selling-credits-through-stripe,
-- docs/design.md#stripe-purchases). A project connects its Stripe account with a webhook secret
-- and, optionally, a secret key (set by the operator's CLI only, never shown). An account may
-- name its Stripe customer (unique in the project).
-- `stripe_payments`: one row per PaymentIntent the project's events named, the row every event
-- of that payment locks first; it holds the payment's refunds as the newest `charge.refunded`
-- gave them, and the purchase once granted. `stripe_refunds` and `stripe_disputes`: the Refunds
-- and Disputes seen, so that a refund or a dispute arriving before its payment's grant is kept
-- and applied when the grant is booked. `purchases`: one per granted payment, keyed by its
-- PaymentIntent in the grant's own transaction; `purchase_credits`: the purchase's credit and its
-- restores. `stripe_events`: every accepted event once, by its Stripe id. None of these is ever
-- deleted.
ALTER TABLE projects ADD COLUMN stripe_webhook_secret TEXT;
ALTER TABLE projects ADD COLUMN stripe_secret_key TEXT;

ALTER TABLE accounts ADD COLUMN stripe_customer_id TEXT;
CREATE UNIQUE INDEX accounts_stripe_customer ON accounts (project_id, stripe_customer_id)
  WHERE stripe_customer_id IS NOT NULL;

CREATE TABLE stripe_payments (
  project_id TEXT NOT NULL,
  payment_intent_id TEXT NOT NULL,
  purchase_id TEXT,
  ignored_reason TEXT,
  charge_refunded INTEGER,
  charge_refunded_at INTEGER,
  PRIMARY KEY (project_id, payment_intent_id)
) WITHOUT ROWID;

CREATE TABLE stripe_refunds (
  project_id TEXT NOT NULL,
  refund_id TEXT NOT NULL,
  payment_intent_id TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount >= 0),
  status TEXT NOT NULL,
  seen_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, refund_id)
) WITHOUT ROWID;
CREATE INDEX stripe_refunds_payment ON stripe_refunds (project_id, payment_intent_id);

CREATE TABLE stripe_disputes (
  project_id TEXT NOT NULL,
  dispute_id TEXT NOT NULL,
  payment_intent_id TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount >= 0),
  withdrawn INTEGER NOT NULL DEFAULT 0,
  reinstated INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, dispute_id)
) WITHOUT ROWID;
CREATE INDEX stripe_disputes_payment ON stripe_disputes (project_id, payment_intent_id);

CREATE TABLE purchases (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  payment_intent_id TEXT NOT NULL,
  checkout_session_id TEXT,
  invoice_id TEXT,
  credits_micros INTEGER NOT NULL CHECK (credits_micros > 0),
  amount_paid INTEGER NOT NULL CHECK (amount_paid >= 0),
  currency TEXT NOT NULL,
  amount_refunded INTEGER NOT NULL DEFAULT 0,
  credits_uncollected_micros INTEGER NOT NULL DEFAULT 0 CHECK (credits_uncollected_micros >= 0),
  status TEXT NOT NULL,
  transaction_id TEXT NOT NULL REFERENCES transactions (id),
  priority INTEGER NOT NULL,
  expires_at_ms INTEGER,
  created_at_ms INTEGER NOT NULL,
  UNIQUE (project_id, payment_intent_id)
);
CREATE INDEX purchases_project ON purchases (project_id, created_at_ms);
CREATE INDEX purchases_account ON purchases (account_id, created_at_ms);

CREATE TABLE purchase_credits (
  purchase_id TEXT NOT NULL REFERENCES purchases (id),
  transaction_id TEXT NOT NULL REFERENCES transactions (id),
  credits_micros INTEGER NOT NULL CHECK (credits_micros > 0),
  restored INTEGER NOT NULL,
  PRIMARY KEY (purchase_id, transaction_id)
) WITHOUT ROWID;
CREATE INDEX purchase_credits_transaction ON purchase_credits (transaction_id);

CREATE TABLE stripe_events (
  project_id TEXT NOT NULL,
  id TEXT NOT NULL,
  type TEXT NOT NULL,
  received_at_ms INTEGER NOT NULL,
  deliveries INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'pending', 'ignored')),
  reason TEXT,
  purchase_id TEXT,
  payment_intent_id TEXT,
  PRIMARY KEY (project_id, id)
) WITHOUT ROWID;
CREATE INDEX stripe_events_received ON stripe_events (project_id, received_at_ms, id);
CREATE INDEX stripe_events_payment ON stripe_events (project_id, payment_intent_id)
  WHERE payment_intent_id IS NOT NULL;
