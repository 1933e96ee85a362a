-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_move. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The plain move of p_amount (taking p_needed of `available`) on the account p_ref at p_now:
-- when the plain conditions hold (ledger_plain_fits), lowers the balance, stamps the account
-- and draws the first grant down, and answers the account, its balance after and the time of
-- the write (the entry's created_at_ms). Otherwise it changes nothing and answers a null
-- account_id. With p_slot_starts/p_slot_spents (ten each: the limited plain debit's), the same
-- UPDATE writes the account's spend slots (src/limits/slots.ts), so the balance and the
-- counters are one write of the row; p_limits as in ledger_plain_account. stored_limits: the
-- limits text of the account found (null: none, or no account), moved or not. first_seq: the
-- grant the move drew from (null for 0), which the entry names (docs/api.md#reversals). in_tree:
-- the account found is in a tree (never plain here: ledger_plain_member_debit is its plain debit).

DROP FUNCTION IF EXISTS ledger_plain_move(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, BIGINT,
  BIGINT[], BIGINT[]);
DROP FUNCTION IF EXISTS ledger_plain_move(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, BIGINT,
  BIGINT[], BIGINT[], TEXT);

CREATE OR REPLACE FUNCTION ledger_plain_move(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_amount BIGINT,
  p_needed BIGINT, p_now BIGINT, p_slot_starts BIGINT[] DEFAULT NULL,
  p_slot_spents BIGINT[] DEFAULT NULL, p_limits TEXT DEFAULT NULL,
  OUT account_id TEXT, OUT external_id TEXT, OUT balance_after_micros BIGINT,
  OUT created_at_ms BIGINT, OUT stored_limits TEXT, OUT first_seq BIGINT, OUT in_tree BOOLEAN)
LANGUAGE plpgsql AS $$
DECLARE
  st RECORD;
BEGIN
  st := ledger_plain_state(p_project, p_ref, p_by_id, p_now, p_limits);
  stored_limits := (st.acc).spend_limits;
  in_tree := coalesce((st.acc).tree_links > 0, false);
  IF NOT ledger_plain_fits(st.plain, st.available, (st.acc).low_balance_threshold_micros,
       st.first_remaining, p_amount, p_needed) THEN
    RETURN;
  END IF;
  -- Two statements rather than one with conditional columns, so that a debit without slots
  -- writes only the balance and the time.
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
    first_seq := st.first_seq;
  END IF;
  account_id := (st.acc).id;
  external_id := (st.acc).external_id;
END;
$$;
