-- 0015 for PostgreSQL: the limited plain debit of 0011 (docs/design.md#spend-limits) in fewer
-- statements, deciding exactly as before. Frozen once merged: changes go in a new file. Amounts
-- in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- Before the plain debit of 0006 (which locks the account again, a no-op, and applies the plain
-- conditions) the function needs only the account's id, limits and time, under its lock, and
-- its holds: it reads those itself instead of the whole `ledger_plain_account`. Each limit's
-- counter is read by its whole key (one index lookup per limit, however many older windows the
-- account has rows of), where 0011 joined the account's rows.
CREATE OR REPLACE FUNCTION ledger_plain_limited_debit(
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
  acc_id TEXT;
  acc_limits TEXT;
  acc_updated BIGINT;
  held BIGINT;
  at_ms BIGINT;
  below BOOLEAN;
BEGIN
  outcome := 'other';
  -- The account as ledger_plain_account finds it (by id, else by externalId), locked.
  IF p_by_id THEN
    SELECT a.id, a.spend_limits, a.updated_at_ms INTO acc_id, acc_limits, acc_updated
      FROM accounts a WHERE a.project_id = p_project AND a.id = p_ref FOR UPDATE;
  END IF;
  IF acc_id IS NULL THEN
    SELECT a.id, a.spend_limits, a.updated_at_ms INTO acc_id, acc_limits, acc_updated
      FROM accounts a WHERE a.project_id = p_project AND a.external_id = p_ref FOR UPDATE;
  END IF;
  IF acc_id IS NULL OR acc_limits IS DISTINCT FROM p_limits THEN
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT coalesce(sum(r.amount_micros), 0) INTO held
    FROM reservations r
    WHERE r.account_id = acc_id AND r.status = 'pending' AND r.expires_at_ms > p_now;
  at_ms := greatest(acc_updated, p_now);
  SELECT bool_and(l.s <= at_ms AND at_ms < l.e
      AND (l.spent + held + p_amount < l.amount OR (l.soft AND l.spent + held >= l.amount)))
    INTO below
    FROM (SELECT u.s, u.e, u.amount, u.soft,
            coalesce((SELECT w.spent_micros FROM spend_windows w
              WHERE w.account_id = acc_id AND w.period = u.p AND w.time_zone = u.z
                AND w.window_start_ms = u.s), 0) AS spent
          FROM unnest(p_periods, p_zones, p_starts, p_ends, p_amounts, p_softs)
            AS u(p, z, s, e, amount, soft)) l;
  IF NOT coalesce(below, false) THEN
    RETURN NEXT;
    RETURN;
  END IF;
  PERFORM set_config('ledger.plain_limits', p_limits, true);
  SELECT d.outcome, d.account_id, d.external_id, d.balance_after_micros, d.created_at_ms, d.seq
    INTO outcome, account_id, external_id, balance_after_micros, created_at_ms, seq
    FROM ledger_plain_debit(p_project, acc_id, true, p_amount, p_now, p_txn_id,
      p_description, p_metadata, p_source, NULL, NULL) d;
  PERFORM set_config('ledger.plain_limits', '', true);
  IF outcome = 'applied' AND p_amount > 0 THEN
    INSERT INTO spend_windows AS sw (account_id, period, time_zone, window_start_ms,
        window_end_ms, spent_micros)
      SELECT DISTINCT acc_id, l.p, l.z, l.s, l.e, p_amount
        FROM unnest(p_periods, p_zones, p_starts, p_ends) AS l(p, z, s, e)
      ON CONFLICT ON CONSTRAINT spend_windows_pkey
      DO UPDATE SET spent_micros = sw.spent_micros + excluded.spent_micros;
  END IF;
  RETURN NEXT;
END;
$$;
