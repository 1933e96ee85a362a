-- 0002: credit grants (docs/api.md#credit-grants-expiry-and-priority). Frozen once merged.
-- Every credit is a grant with what is left of it; a debit spends grants in the spending order
-- (docs/api.md#spending-order), and an account's balance equals the sum of its grants'
-- remaining_micros (checked by `ledger verify`). Amounts in micro-credits, times in epoch ms.

-- seq is the rowid: ascending in insertion order, which is ledger order within an account.
-- expiry_booked is 1 once the grant's expiry has been booked; what remains of it then is what
-- reservations held at that moment.
CREATE TABLE credit_grants (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects (id),
  account_id TEXT NOT NULL REFERENCES accounts (id),
  transaction_id TEXT,
  account_plan_id TEXT,
  amount_micros INTEGER NOT NULL
    CHECK (amount_micros > 0 AND amount_micros <= 9000000000000000),
  remaining_micros INTEGER NOT NULL
    CHECK (remaining_micros >= 0 AND remaining_micros <= amount_micros),
  priority INTEGER NOT NULL CHECK (priority >= 0 AND priority <= 100),
  expires_at_ms INTEGER,
  expiry_booked INTEGER NOT NULL DEFAULT 0
    CHECK (expiry_booked IN (0, 1) AND (expiry_booked = 0 OR expires_at_ms IS NOT NULL)),
  created_at_ms INTEGER NOT NULL
);
-- The spending order of an account's grants with something left: booked-expired first, then
-- priority, then expiresAt (none last: 2^53 - 1 stands for none), then ledger order. A debit
-- reads its first rows in index order.
CREATE INDEX credit_grants_spend ON credit_grants
  (account_id, expiry_booked DESC, priority, coalesce(expires_at_ms, 9007199254740991), seq)
  WHERE remaining_micros > 0;
-- Grants whose expiry is still to be booked: per account (every write checks its account) and
-- by time (the expiry job).
CREATE INDEX credit_grants_account_due ON credit_grants (account_id, expires_at_ms)
  WHERE remaining_micros > 0 AND expiry_booked = 0 AND expires_at_ms IS NOT NULL;
CREATE INDEX credit_grants_due ON credit_grants (expires_at_ms)
  WHERE remaining_micros > 0 AND expiry_booked = 0 AND expires_at_ms IS NOT NULL;
-- Expired grants that holds still cover (the expiry job removes them once no hold does).
CREATE INDEX credit_grants_held ON credit_grants (account_id)
  WHERE remaining_micros > 0 AND expiry_booked = 1;
-- The grant list, newest first.
CREATE INDEX credit_grants_account ON credit_grants (account_id, seq);

-- Credits booked before grants existed: per account, one grant of the balance with priority 50
-- and no expiry, except the unspent part of the latest grant of a non-rolling plan (the old
-- plan bucket), which keeps priority 0 and expires at the end of its period (the assignment's
-- next grant, or its end after the last one). No ledger row changes.
INSERT INTO credit_grants
  (id, project_id, account_id, transaction_id, account_plan_id, amount_micros,
   remaining_micros, priority, expires_at_ms, expiry_booked, created_at_ms)
SELECT
  'grt_' || substr(b.id, 5), b.project_id, b.id, NULL, NULL,
  b.balance_micros - b.bucket_micros, b.balance_micros - b.bucket_micros,
  50, NULL, 0, b.updated_at_ms
FROM (
  SELECT a.id, a.project_id, a.balance_micros, a.updated_at_ms,
    CASE WHEN EXISTS (SELECT 1 FROM account_plans ap WHERE ap.id = a.plan_bucket_account_plan_id)
         THEN min(a.plan_bucket_micros, a.balance_micros) ELSE 0 END AS bucket_micros
  FROM accounts a
) b
WHERE b.balance_micros - b.bucket_micros > 0;

INSERT INTO credit_grants
  (id, project_id, account_id, transaction_id, account_plan_id, amount_micros,
   remaining_micros, priority, expires_at_ms, expiry_booked, created_at_ms)
SELECT
  'grt_' || coalesce(substr(t.id, 5), substr(ap.id, 4)), a.project_id, a.id, t.id, ap.id,
  max(coalesce(t.amount_micros, 0), min(a.plan_bucket_micros, a.balance_micros)),
  min(a.plan_bucket_micros, a.balance_micros),
  0, coalesce(ap.next_grant_at_ms, ap.expires_at_ms), 0, coalesce(t.created_at_ms, a.updated_at_ms)
FROM accounts a
JOIN account_plans ap ON ap.id = a.plan_bucket_account_plan_id
LEFT JOIN plan_grants pg ON pg.account_plan_id = ap.id AND pg.period_index = ap.grants_made - 1
LEFT JOIN transactions t ON t.id = pg.transaction_id
WHERE min(a.plan_bucket_micros, a.balance_micros) > 0;

UPDATE accounts SET plan_bucket_micros = 0, plan_bucket_account_plan_id = NULL
WHERE plan_bucket_micros <> 0 OR plan_bucket_account_plan_id IS NOT NULL;
