-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_limited_debit. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The limited plain debit (docs/design.md#spend-limits): a deduction or manual debit of p_amount
-- on an account whose stored limits are p_limits, given each limit's slot (p_slots, 0-based),
-- its current window (p_starts, p_ends, as src/limits/windows.ts computes them), amount and
-- softness. It is plain only when the account's limits are still p_limits, the debit's time
-- lies in every window, and each limit is in the plain region of the admission rule
-- (ledger_plain_limit, generated from src/admission/rule.ts: it neither refuses the debit nor
-- is reached by it, so no event), and the write is the plain debit, which writes the slots
-- with the balance. Otherwise nothing is changed ('other') and the general path runs, which
-- applies the same rule on numbers. stored_limits: the account's limits text, so that a caller
-- that guessed them wrong calls again for these (src/db/seen-limits.ts). 'tree' instead of
-- 'other': the account is in a tree, whose plain debit is ledger_plain_member_debit.

DROP FUNCTION IF EXISTS ledger_plain_limited_debit(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, TEXT,
  TEXT, TEXT, TEXT, TEXT, INT[], BIGINT[], BIGINT[], BIGINT[], BOOLEAN[]);

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
  seq BIGINT,
  stored_limits TEXT
) LANGUAGE plpgsql AS $$
DECLARE
  acc_id TEXT;
  acc_limits TEXT;
  acc_tree INT;
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
    SELECT a.id, a.spend_limits, a.tree_links, a.updated_at_ms, ARRAY[a.sw0_start_ms, a.sw1_start_ms, a.sw2_start_ms, a.sw3_start_ms, a.sw4_start_ms, a.sw5_start_ms, a.sw6_start_ms, a.sw7_start_ms, a.sw8_start_ms, a.sw9_start_ms],
        ARRAY[a.sw0_spent_micros, a.sw1_spent_micros, a.sw2_spent_micros, a.sw3_spent_micros, a.sw4_spent_micros, a.sw5_spent_micros, a.sw6_spent_micros, a.sw7_spent_micros, a.sw8_spent_micros, a.sw9_spent_micros]
      INTO acc_id, acc_limits, acc_tree, acc_updated, starts, spents
      FROM accounts a WHERE a.project_id = p_project AND a.id = p_ref FOR UPDATE;
  END IF;
  IF acc_id IS NULL THEN
    SELECT a.id, a.spend_limits, a.tree_links, a.updated_at_ms, ARRAY[a.sw0_start_ms, a.sw1_start_ms, a.sw2_start_ms, a.sw3_start_ms, a.sw4_start_ms, a.sw5_start_ms, a.sw6_start_ms, a.sw7_start_ms, a.sw8_start_ms, a.sw9_start_ms],
        ARRAY[a.sw0_spent_micros, a.sw1_spent_micros, a.sw2_spent_micros, a.sw3_spent_micros, a.sw4_spent_micros, a.sw5_spent_micros, a.sw6_spent_micros, a.sw7_spent_micros, a.sw8_spent_micros, a.sw9_spent_micros]
      INTO acc_id, acc_limits, acc_tree, acc_updated, starts, spents
      FROM accounts a WHERE a.project_id = p_project AND a.external_id = p_ref FOR UPDATE;
  END IF;
  stored_limits := acc_limits;
  IF acc_tree > 0 THEN
    outcome := 'tree';
  END IF;
  IF acc_id IS NULL OR acc_tree > 0 OR acc_limits IS DISTINCT FROM p_limits
      OR coalesce(array_length(p_slots, 1), 0) = 0 THEN
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT coalesce(sum(r.amount_micros), 0) INTO held
    FROM reservations r
    WHERE r.account_id = acc_id AND r.status = 'pending' AND r.expires_at_ms > p_now;
  at_ms := greatest(acc_updated, p_now);
  -- Each limit's window holds the debit's time, and the limit is in its plain region; else
  -- 'other'. Its spent is its slot's when the slot counts that window, else 0.
  FOR i IN 1 .. array_length(p_slots, 1) LOOP
    IF NOT (p_starts[i] <= at_ms AND at_ms < p_ends[i]) THEN
      RETURN NEXT;
      RETURN;
    END IF;
    s := p_slots[i] + 1;
    spent := CASE WHEN starts[s] = p_starts[i] THEN coalesce(spents[s], 0) ELSE 0 END;
    IF NOT ledger_plain_limit(spent, held, p_amount, p_amounts[i], p_softs[i]) THEN
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
  -- The plain debit, which writes the slots with the balance (one write of the account's row),
  -- told that the account's limits are p_limits, just checked.
  SELECT d.outcome, d.account_id, d.external_id, d.balance_after_micros, d.created_at_ms, d.seq,
      d.stored_limits
    INTO outcome, account_id, external_id, balance_after_micros, created_at_ms, seq, stored_limits
    FROM ledger_plain_debit(p_project, acc_id, true, p_amount, p_now, p_txn_id,
      p_description, p_metadata, p_source, NULL, NULL, starts, spents, p_limits) d;
  RETURN NEXT;
END;
$$;
