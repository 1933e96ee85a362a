-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_debit. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The plain debit of p_amount: a deduction or manual debit, or (p_hold set) the confirm of that
-- pending hold of p_hold_micros, which the caller has locked and checked. The plain move, then
-- the entry and the settlement of the hold. Answers 'other', having changed nothing, when the
-- debit is not plain (the service then runs its general path). The slots and p_limits are the
-- limited plain debit's (ledger_plain_move). stored_limits: the account's limits text, so that a
-- caller that guessed them wrong calls again for these (src/db/seen-limits.ts). 'tree' instead
-- of 'other': the account is in a tree, whose plain debit is ledger_plain_member_debit.

DROP FUNCTION IF EXISTS ledger_plain_debit(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, TEXT, TEXT,
  TEXT, TEXT, TEXT, BIGINT, BIGINT[], BIGINT[]);
DROP FUNCTION IF EXISTS ledger_plain_debit(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, TEXT, TEXT,
  TEXT, TEXT, TEXT, BIGINT, BIGINT[], BIGINT[], TEXT);

CREATE OR REPLACE FUNCTION ledger_plain_debit(
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
  p_slot_spents BIGINT[] DEFAULT NULL,
  p_limits TEXT DEFAULT NULL
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
  m RECORD;
BEGIN
  outcome := 'other';
  m := ledger_plain_move(p_project, p_ref, p_by_id, p_amount,
    p_amount - coalesce(p_hold_micros, 0), p_now, p_slot_starts, p_slot_spents, p_limits);
  stored_limits := m.stored_limits;
  IF m.account_id IS NULL THEN
    IF m.in_tree THEN
      outcome := 'tree';
    END IF;
    RETURN NEXT;
    RETURN;
  END IF;
  INSERT INTO transactions AS t (id, project_id, account_id, type, amount_micros,
      balance_after_micros, description, metadata, source, reservation_id, account_plan_id,
      created_at_ms, reversal_of, grant_seq)
    VALUES (p_txn_id, p_project, m.account_id, 'debit', p_amount, m.balance_after_micros,
      p_description, p_metadata, p_source, p_hold, NULL, m.created_at_ms, NULL, m.first_seq)
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
