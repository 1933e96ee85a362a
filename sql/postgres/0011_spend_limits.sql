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
-- ledger_plain_account of 0006 exactly as it was, with that one more condition, unless the
-- limited plain debit below has checked the account's limits in this transaction (it sets
-- ledger.plain_limits to the limits' text it checked). The general path (TypeScript) is the one
-- place the limits are enforced (src/limits/enforce.ts).
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
  plain := (acc.spend_limits IS NULL
            OR acc.spend_limits = current_setting('ledger.plain_limits', true))
       AND NOT EXISTS (SELECT 1 FROM credit_grants d WHERE d.account_id = acc.id
             AND d.exhausted = 0 AND d.expiry_booked = 0 AND d.expires_at_ms IS NOT NULL
             AND d.expires_at_ms <= p_now)
       AND NOT EXISTS (SELECT 1 FROM credit_grants h WHERE h.account_id = acc.id
             AND h.exhausted = 0 AND h.expiry_booked = 1);
END;
$$;

-- The limited plain debit (docs/design.md#spend-limits): a deduction or manual debit of p_amount
-- on an account whose stored limits are p_limits, given each limit's current window (p_periods,
-- p_zones, p_starts, p_ends, as src/limits/windows.ts computes them), amount and softness. It is
-- plain only when the account's limits are still p_limits, the debit's time lies in every window,
-- and every limit stays strictly below its amount after it (or is soft and already reached):
-- then no limit refuses and none is reached (no event), and the write is the plain debit of 0006
-- plus the counters' upsert. Otherwise nothing is changed ('other') and the general path runs,
-- which applies the rule itself.
CREATE FUNCTION ledger_plain_limited_debit(
  p_project TEXT,
  p_ref TEXT,
  p_by_id BOOLEAN,
  p_amount BIGINT,
  p_now BIGINT,
  p_txn_id TEXT,
  p_description TEXT,
  p_metadata TEXT,
  p_source TEXT,
  p_limits TEXT,
  p_periods TEXT[],
  p_zones TEXT[],
  p_starts BIGINT[],
  p_ends BIGINT[],
  p_amounts BIGINT[],
  p_softs BOOLEAN[]
) RETURNS TABLE (
  outcome TEXT,
  account_id TEXT,
  external_id TEXT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
  info RECORD;
  held BIGINT;
  at_ms BIGINT;
  below BOOLEAN;
BEGIN
  SELECT * INTO info FROM ledger_plain_account(p_project, p_ref, p_by_id, p_now);
  IF (info.acc).id IS NULL OR (info.acc).spend_limits IS DISTINCT FROM p_limits THEN
    outcome := 'other';
    RETURN NEXT;
    RETURN;
  END IF;
  held := (info.acc).balance_micros - info.available;
  at_ms := greatest((info.acc).updated_at_ms, p_now);
  SELECT bool_and(l.s <= at_ms AND at_ms < l.e
      AND (coalesce(w.spent_micros, 0) + held + p_amount < l.amount
           OR (l.soft AND coalesce(w.spent_micros, 0) + held >= l.amount)))
    INTO below
    FROM unnest(p_periods, p_zones, p_starts, p_ends, p_amounts, p_softs)
      AS l(p, z, s, e, amount, soft)
    LEFT JOIN spend_windows w ON w.account_id = (info.acc).id AND w.period = l.p
      AND w.time_zone = l.z AND w.window_start_ms = l.s;
  IF NOT coalesce(below, false) THEN
    outcome := 'other';
    RETURN NEXT;
    RETURN;
  END IF;
  PERFORM set_config('ledger.plain_limits', p_limits, true);
  SELECT d.outcome, d.account_id, d.external_id, d.balance_after_micros, d.created_at_ms, d.seq
    INTO outcome, account_id, external_id, balance_after_micros, created_at_ms, seq
    FROM ledger_plain_debit(p_project, (info.acc).id, true, p_amount, p_now, p_txn_id,
      p_description, p_metadata, p_source, NULL, NULL) d;
  PERFORM set_config('ledger.plain_limits', '', true);
  IF outcome = 'applied' AND p_amount > 0 THEN
    INSERT INTO spend_windows AS sw (account_id, period, time_zone, window_start_ms,
        window_end_ms, spent_micros)
      SELECT DISTINCT (info.acc).id, l.p, l.z, l.s, l.e, p_amount
        FROM unnest(p_periods, p_zones, p_starts, p_ends) AS l(p, z, s, e)
      ON CONFLICT ON CONSTRAINT spend_windows_pkey
      DO UPDATE SET spent_micros = sw.spent_micros + excluded.spent_micros;
  END IF;
  RETURN NEXT;
END;
$$;
