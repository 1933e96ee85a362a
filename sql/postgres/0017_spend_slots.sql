-- 0017 for PostgreSQL: the same change as sql/0017_spend_slots.sql. An account's spend counters
-- move into its own row (docs/design.md#spend-limits); `ledger_plain_limited_debit` reads them
-- there and hands them, after the debit, to the plain debit (ledger_plain_debit and
-- ledger_plain_move, re-created with two optional arguments), whose balance UPDATE writes them.
-- Frozen once merged: changes go in a new file. Amounts in micro-credits, times in Unix epoch
-- milliseconds (_ms).
--
-- Slot i (0–9) is the i-th distinct (period, time zone) of the account's limits, in the order of
-- its `spend_limits` array (at most 10 limits, so at most 10 slots): sw<i>_start_ms is the start
-- of the window it counts, sw<i>_spent_micros what the account's spending debits booked in that
-- window. A slot whose start is not the current window's counts 0 for it. `ledger verify`
-- recomputes every slot from the ledger rows of its window.
ALTER TABLE accounts
  ADD COLUMN sw0_start_ms BIGINT,
  ADD COLUMN sw0_spent_micros BIGINT CHECK (sw0_spent_micros IS NULL OR sw0_spent_micros >= 0),
  ADD COLUMN sw1_start_ms BIGINT,
  ADD COLUMN sw1_spent_micros BIGINT CHECK (sw1_spent_micros IS NULL OR sw1_spent_micros >= 0),
  ADD COLUMN sw2_start_ms BIGINT,
  ADD COLUMN sw2_spent_micros BIGINT CHECK (sw2_spent_micros IS NULL OR sw2_spent_micros >= 0),
  ADD COLUMN sw3_start_ms BIGINT,
  ADD COLUMN sw3_spent_micros BIGINT CHECK (sw3_spent_micros IS NULL OR sw3_spent_micros >= 0),
  ADD COLUMN sw4_start_ms BIGINT,
  ADD COLUMN sw4_spent_micros BIGINT CHECK (sw4_spent_micros IS NULL OR sw4_spent_micros >= 0),
  ADD COLUMN sw5_start_ms BIGINT,
  ADD COLUMN sw5_spent_micros BIGINT CHECK (sw5_spent_micros IS NULL OR sw5_spent_micros >= 0),
  ADD COLUMN sw6_start_ms BIGINT,
  ADD COLUMN sw6_spent_micros BIGINT CHECK (sw6_spent_micros IS NULL OR sw6_spent_micros >= 0),
  ADD COLUMN sw7_start_ms BIGINT,
  ADD COLUMN sw7_spent_micros BIGINT CHECK (sw7_spent_micros IS NULL OR sw7_spent_micros >= 0),
  ADD COLUMN sw8_start_ms BIGINT,
  ADD COLUMN sw8_spent_micros BIGINT CHECK (sw8_spent_micros IS NULL OR sw8_spent_micros >= 0),
  ADD COLUMN sw9_start_ms BIGINT,
  ADD COLUMN sw9_spent_micros BIGINT CHECK (sw9_spent_micros IS NULL OR sw9_spent_micros >= 0);

-- Each account's counters move from spend_windows to its slots: for each (period, zone) of its
-- limits, the row of the latest window.
CREATE TABLE spend_slot_copy AS
WITH limit_windows AS (
  SELECT a.id AS account_id, j.value ->> 'period' AS period, j.value ->> 'timeZone' AS time_zone,
    min(j.ord) AS first_limit
  FROM accounts a, jsonb_array_elements(a.spend_limits::jsonb) WITH ORDINALITY AS j (value, ord)
  WHERE a.spend_limits IS NOT NULL
  GROUP BY 1, 2, 3
), slots AS (
  SELECT account_id, period, time_zone,
    row_number() OVER (PARTITION BY account_id ORDER BY first_limit) - 1 AS slot
  FROM limit_windows
)
SELECT DISTINCT ON (s.account_id, s.slot) s.account_id, s.slot, sw.window_start_ms,
  sw.spent_micros
FROM slots s
JOIN spend_windows sw ON sw.account_id = s.account_id AND sw.period = s.period
  AND sw.time_zone = s.time_zone
ORDER BY s.account_id, s.slot, sw.window_start_ms DESC;
UPDATE accounts SET sw0_start_ms = c.window_start_ms, sw0_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 0;
UPDATE accounts SET sw1_start_ms = c.window_start_ms, sw1_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 1;
UPDATE accounts SET sw2_start_ms = c.window_start_ms, sw2_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 2;
UPDATE accounts SET sw3_start_ms = c.window_start_ms, sw3_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 3;
UPDATE accounts SET sw4_start_ms = c.window_start_ms, sw4_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 4;
UPDATE accounts SET sw5_start_ms = c.window_start_ms, sw5_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 5;
UPDATE accounts SET sw6_start_ms = c.window_start_ms, sw6_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 6;
UPDATE accounts SET sw7_start_ms = c.window_start_ms, sw7_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 7;
UPDATE accounts SET sw8_start_ms = c.window_start_ms, sw8_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 8;
UPDATE accounts SET sw9_start_ms = c.window_start_ms, sw9_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 9;
DROP TABLE spend_slot_copy;
DROP TABLE spend_windows;

-- The plain move and the plain debit of 0016, deciding and writing exactly as before, with two
-- more arguments, null by default: the account's slots after the debit (p_slot_starts,
-- p_slot_spents, ten each), which the limited plain debit below passes so that the balance and
-- the counters are one write of the account's row. Their callers that pass none (the plain
-- debit, the confirm, a batch's grouped debits) leave the slots as they are.
DROP FUNCTION ledger_plain_debit(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, TEXT, TEXT, TEXT, TEXT,
  TEXT, BIGINT);
DROP FUNCTION ledger_plain_move(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, BIGINT);

CREATE FUNCTION ledger_plain_move(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_amount BIGINT,
  p_needed BIGINT, p_now BIGINT, p_slot_starts BIGINT[] DEFAULT NULL,
  p_slot_spents BIGINT[] DEFAULT NULL,
  OUT account_id TEXT, OUT external_id TEXT, OUT balance_after_micros BIGINT,
  OUT created_at_ms BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  st RECORD;
BEGIN
  st := ledger_plain_state(p_project, p_ref, p_by_id, p_now);
  IF NOT ledger_plain_fits(st.plain, st.available, (st.acc).low_balance_threshold_micros,
       st.first_remaining, p_amount, p_needed) THEN
    RETURN;
  END IF;
  -- Two statements rather than one with conditional columns, so that a debit without slots runs
  -- 0016's statement exactly.
  IF p_slot_starts IS NULL THEN
    UPDATE accounts a SET balance_micros = a.balance_micros - p_amount,
        updated_at_ms = greatest(a.updated_at_ms, p_now)
      WHERE a.id = (st.acc).id
      RETURNING a.balance_micros, a.updated_at_ms INTO balance_after_micros, created_at_ms;
  ELSE
    UPDATE accounts a SET balance_micros = a.balance_micros - p_amount,
        updated_at_ms = greatest(a.updated_at_ms, p_now),
        sw0_start_ms = p_slot_starts[1], sw0_spent_micros = p_slot_spents[1],
        sw1_start_ms = p_slot_starts[2], sw1_spent_micros = p_slot_spents[2],
        sw2_start_ms = p_slot_starts[3], sw2_spent_micros = p_slot_spents[3],
        sw3_start_ms = p_slot_starts[4], sw3_spent_micros = p_slot_spents[4],
        sw4_start_ms = p_slot_starts[5], sw4_spent_micros = p_slot_spents[5],
        sw5_start_ms = p_slot_starts[6], sw5_spent_micros = p_slot_spents[6],
        sw6_start_ms = p_slot_starts[7], sw6_spent_micros = p_slot_spents[7],
        sw7_start_ms = p_slot_starts[8], sw7_spent_micros = p_slot_spents[8],
        sw8_start_ms = p_slot_starts[9], sw8_spent_micros = p_slot_spents[9],
        sw9_start_ms = p_slot_starts[10], sw9_spent_micros = p_slot_spents[10]
      WHERE a.id = (st.acc).id
      RETURNING a.balance_micros, a.updated_at_ms INTO balance_after_micros, created_at_ms;
  END IF;
  IF p_amount > 0 THEN
    UPDATE credit_grant_remaining rem SET remaining_micros = rem.remaining_micros - p_amount
      WHERE rem.seq = st.first_seq;
  END IF;
  account_id := (st.acc).id;
  external_id := (st.acc).external_id;
END;
$$;

CREATE FUNCTION ledger_plain_debit(
  p_project TEXT,
  p_ref TEXT,
  p_by_id BOOLEAN,
  p_amount BIGINT,
  p_now BIGINT,
  p_txn_id TEXT,
  p_description TEXT,
  p_metadata TEXT,
  p_source TEXT,
  p_hold TEXT,
  p_hold_micros BIGINT,
  p_slot_starts BIGINT[] DEFAULT NULL,
  p_slot_spents BIGINT[] DEFAULT NULL
) RETURNS TABLE (
  outcome TEXT,
  account_id TEXT,
  external_id TEXT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
  m RECORD;
BEGIN
  outcome := 'other';
  m := ledger_plain_move(p_project, p_ref, p_by_id, p_amount,
    p_amount - coalesce(p_hold_micros, 0), p_now, p_slot_starts, p_slot_spents);
  IF m.account_id IS NULL THEN
    RETURN NEXT;
    RETURN;
  END IF;
  INSERT INTO transactions AS t (id, project_id, account_id, type, amount_micros,
      balance_after_micros, description, metadata, source, reservation_id, account_plan_id,
      created_at_ms)
    VALUES (p_txn_id, p_project, m.account_id, 'debit', p_amount, m.balance_after_micros,
      p_description, p_metadata, p_source, p_hold, NULL, m.created_at_ms)
    RETURNING t.seq INTO seq;
  IF p_hold IS NOT NULL THEN
    UPDATE reservations r SET status = 'confirmed', settled_at_ms = p_now,
        actual_micros = p_amount, transaction_id = p_txn_id
      WHERE r.id = p_hold AND r.status = 'pending';
  END IF;
  outcome := 'applied';
  account_id := m.account_id;
  external_id := m.external_id;
  balance_after_micros := m.balance_after_micros;
  created_at_ms := m.created_at_ms;
  RETURN NEXT;
END;
$$;

-- The limited plain debit of 0015, deciding exactly as before, with the counters read from the
-- account row it locks and written back by the plain debit's own UPDATE of that row. p_slots gives each limit's slot
-- (0-based), p_starts and p_ends each limit's window.
DROP FUNCTION ledger_plain_limited_debit(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, TEXT, TEXT, TEXT,
  TEXT, TEXT, TEXT[], TEXT[], BIGINT[], BIGINT[], BIGINT[], BOOLEAN[]);

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
  p_slots INT[],
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
  starts BIGINT[];
  spents BIGINT[];
  added BOOLEAN[] := ARRAY[false, false, false, false, false, false, false, false, false, false];
  held BIGINT;
  at_ms BIGINT;
  spent BIGINT;
  s INT;
BEGIN
  outcome := 'other';
  -- The account as ledger_plain_account finds it (by id, else by externalId), locked.
  IF p_by_id THEN
    SELECT a.id, a.spend_limits, a.updated_at_ms, ARRAY[a.sw0_start_ms, a.sw1_start_ms, a.sw2_start_ms, a.sw3_start_ms, a.sw4_start_ms, a.sw5_start_ms, a.sw6_start_ms, a.sw7_start_ms, a.sw8_start_ms, a.sw9_start_ms],
        ARRAY[a.sw0_spent_micros, a.sw1_spent_micros, a.sw2_spent_micros, a.sw3_spent_micros, a.sw4_spent_micros, a.sw5_spent_micros, a.sw6_spent_micros, a.sw7_spent_micros, a.sw8_spent_micros, a.sw9_spent_micros]
      INTO acc_id, acc_limits, acc_updated, starts, spents
      FROM accounts a WHERE a.project_id = p_project AND a.id = p_ref FOR UPDATE;
  END IF;
  IF acc_id IS NULL THEN
    SELECT a.id, a.spend_limits, a.updated_at_ms, ARRAY[a.sw0_start_ms, a.sw1_start_ms, a.sw2_start_ms, a.sw3_start_ms, a.sw4_start_ms, a.sw5_start_ms, a.sw6_start_ms, a.sw7_start_ms, a.sw8_start_ms, a.sw9_start_ms],
        ARRAY[a.sw0_spent_micros, a.sw1_spent_micros, a.sw2_spent_micros, a.sw3_spent_micros, a.sw4_spent_micros, a.sw5_spent_micros, a.sw6_spent_micros, a.sw7_spent_micros, a.sw8_spent_micros, a.sw9_spent_micros]
      INTO acc_id, acc_limits, acc_updated, starts, spents
      FROM accounts a WHERE a.project_id = p_project AND a.external_id = p_ref FOR UPDATE;
  END IF;
  IF acc_id IS NULL OR acc_limits IS DISTINCT FROM p_limits
      OR coalesce(array_length(p_slots, 1), 0) = 0 THEN
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT coalesce(sum(r.amount_micros), 0) INTO held
    FROM reservations r
    WHERE r.account_id = acc_id AND r.status = 'pending' AND r.expires_at_ms > p_now;
  at_ms := greatest(acc_updated, p_now);
  -- Each limit's window holds the debit's time, and the limit stays below its amount after it
  -- (or is soft and already reached); else 'other'. Its spent is its slot's when the slot counts
  -- that window, else 0.
  FOR i IN 1 .. array_length(p_slots, 1) LOOP
    IF NOT (p_starts[i] <= at_ms AND at_ms < p_ends[i]) THEN
      RETURN NEXT;
      RETURN;
    END IF;
    s := p_slots[i] + 1;
    spent := CASE WHEN starts[s] = p_starts[i] THEN coalesce(spents[s], 0) ELSE 0 END;
    IF NOT (spent + held + p_amount < p_amounts[i]
            OR (p_softs[i] AND spent + held >= p_amounts[i])) THEN
      RETURN NEXT;
      RETURN;
    END IF;
  END LOOP;
  -- The slots after the debit: once per slot, whose window is the same for each of its limits.
  IF p_amount > 0 THEN
    FOR i IN 1 .. array_length(p_slots, 1) LOOP
      s := p_slots[i] + 1;
      CONTINUE WHEN added[s];
      added[s] := true;
      IF starts[s] = p_starts[i] THEN
        spents[s] := coalesce(spents[s], 0) + p_amount;
      ELSE
        starts[s] := p_starts[i];
        spents[s] := p_amount;
      END IF;
    END LOOP;
  END IF;
  PERFORM set_config('ledger.plain_limits', p_limits, true);
  -- The plain debit, which writes the slots with the balance (one write of the account's row).
  SELECT d.outcome, d.account_id, d.external_id, d.balance_after_micros, d.created_at_ms, d.seq
    INTO outcome, account_id, external_id, balance_after_micros, created_at_ms, seq
    FROM ledger_plain_debit(p_project, acc_id, true, p_amount, p_now, p_txn_id,
      p_description, p_metadata, p_source, NULL, NULL, starts, spents) d;
  PERFORM set_config('ledger.plain_limits', '', true);
  RETURN NEXT;
END;
$$;
