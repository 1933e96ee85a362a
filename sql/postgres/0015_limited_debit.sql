-- 0015 for PostgreSQL: the limited plain debit of 0011 (docs/design.md#spend-limits) in fewer
-- statements, deciding exactly as before. Frozen once merged: changes go in a new file. Amounts
-- in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- Before the plain debit of 0006 (which locks the account again, a no-op, and applies the plain
-- conditions) the function needs only the account's id, limits and time, under its lock, and
-- its holds: it reads those itself instead of the whole `ledger_plain_account`. Each limit's
-- counter is read, and each window's counter then upserted, by one statement of one row by its
-- whole key in a loop over the limits: a plan PostgreSQL caches once per session, where 0011's
-- statements over `unnest` of the arrays were planned again at every call (their generic plan
-- looks costlier than a custom one to the plan cache), and one index lookup however many older
-- windows the account has rows of, where 0011 joined the account's rows.
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
  spent BIGINT;
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
  -- Each limit's window holds the debit's time, and the limit stays below its amount after it
  -- (or is soft and already reached); else 'other'. One lookup by key per limit.
  IF coalesce(array_length(p_periods, 1), 0) = 0 THEN
    RETURN NEXT;
    RETURN;
  END IF;
  FOR i IN 1 .. array_length(p_periods, 1) LOOP
    IF NOT (p_starts[i] <= at_ms AND at_ms < p_ends[i]) THEN
      RETURN NEXT;
      RETURN;
    END IF;
    SELECT w.spent_micros INTO spent FROM spend_windows w
      WHERE w.account_id = acc_id AND w.period = p_periods[i] AND w.time_zone = p_zones[i]
        AND w.window_start_ms = p_starts[i];
    spent := coalesce(spent, 0);
    IF NOT (spent + held + p_amount < p_amounts[i]
            OR (p_softs[i] AND spent + held >= p_amounts[i])) THEN
      RETURN NEXT;
      RETURN;
    END IF;
  END LOOP;
  PERFORM set_config('ledger.plain_limits', p_limits, true);
  SELECT d.outcome, d.account_id, d.external_id, d.balance_after_micros, d.created_at_ms, d.seq
    INTO outcome, account_id, external_id, balance_after_micros, created_at_ms, seq
    FROM ledger_plain_debit(p_project, acc_id, true, p_amount, p_now, p_txn_id,
      p_description, p_metadata, p_source, NULL, NULL) d;
  PERFORM set_config('ledger.plain_limits', '', true);
  IF outcome = 'applied' AND p_amount > 0 THEN
    -- The counters: once per distinct (period, zone), whose window is the same for each limit.
    <<windows>>
    FOR i IN 1 .. array_length(p_periods, 1) LOOP
      FOR j IN 1 .. i - 1 LOOP
        CONTINUE windows WHEN p_periods[j] = p_periods[i] AND p_zones[j] = p_zones[i];
      END LOOP;
      INSERT INTO spend_windows AS sw (account_id, period, time_zone, window_start_ms,
          window_end_ms, spent_micros)
        VALUES (acc_id, p_periods[i], p_zones[i], p_starts[i], p_ends[i], p_amount)
        ON CONFLICT ON CONSTRAINT spend_windows_pkey
        DO UPDATE SET spent_micros = sw.spent_micros + excluded.spent_micros;
    END LOOP;
  END IF;
  RETURN NEXT;
END;
$$;
