-- 0011 for PostgreSQL: the same schema as sql/0011_spend_limits.sql (spend limits per period,
-- docs/api.md#spend-limits). Frozen once merged: changes go in a new file. Amounts in
-- micro-credits, times in Unix epoch milliseconds (_ms).

-- An account's spend limits as JSON text: an array of {period, amountMicros, timeZone, soft}
-- (src/limits/limits.ts), replaced whole by create/update; null when it has none.
ALTER TABLE accounts ADD COLUMN spend_limits TEXT;

-- What an account's spending debits booked in one window of one (period, time zone), kept in the
-- same transaction as each debit; `ledger verify` recomputes every row from the ledger.
CREATE TABLE spend_windows (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  period TEXT NOT NULL CHECK (period IN ('hour', 'day', 'week', 'month')),
  time_zone TEXT NOT NULL,
  window_start_ms BIGINT NOT NULL,
  window_end_ms BIGINT NOT NULL CHECK (window_end_ms > window_start_ms),
  spent_micros BIGINT NOT NULL CHECK (spent_micros >= 0),
  PRIMARY KEY (account_id, period, time_zone, window_start_ms)
);

-- spend_limit.reached sent: once per account, limit and window.
CREATE TABLE spend_limit_reached (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  limit_key TEXT NOT NULL,
  window_start_ms BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  PRIMARY KEY (account_id, limit_key, window_start_ms)
);

-- The plain paths (docs/design.md#plain-writes) apply only to an account without spend limits:
-- ledger_plain_account of 0006 exactly as it was, with that one more condition. The general path
-- (TypeScript) is the one place the limits are enforced (src/limits/enforce.ts).
CREATE OR REPLACE FUNCTION ledger_plain_account(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_now BIGINT,
  OUT acc accounts, OUT available BIGINT, OUT plain BOOLEAN)
LANGUAGE plpgsql AS $$
BEGIN
  plain := false;
  IF p_by_id THEN
    SELECT * INTO acc FROM accounts a WHERE a.project_id = p_project AND a.id = p_ref FOR UPDATE;
  END IF;
  IF acc.id IS NULL THEN
    SELECT * INTO acc FROM accounts a
      WHERE a.project_id = p_project AND a.external_id = p_ref FOR UPDATE;
  END IF;
  IF acc.id IS NULL THEN
    RETURN;
  END IF;
  SELECT acc.balance_micros - coalesce(sum(r.amount_micros), 0) INTO available
    FROM reservations r
    WHERE r.account_id = acc.id AND r.status = 'pending' AND r.expires_at_ms > p_now;
  plain := acc.spend_limits IS NULL
       AND NOT EXISTS (SELECT 1 FROM credit_grants d WHERE d.account_id = acc.id
             AND d.exhausted = 0 AND d.expiry_booked = 0 AND d.expires_at_ms IS NOT NULL
             AND d.expires_at_ms <= p_now)
       AND NOT EXISTS (SELECT 1 FROM credit_grants h WHERE h.account_id = acc.id
             AND h.exhausted = 0 AND h.expiry_booked = 1);
END;
$$;
