-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_confirm. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The confirm of reservation p_reservation by p_actual, when it is plain: locks the hold first
-- (the general path's lock order, hold then account); the hold is the project's, pending and
-- unexpired at p_now, and carries its confirm's text; then the plain debit with that text and
-- p_source, which settles the hold. Answers as ledger_plain_debit, with the hold as it was read
-- ('other', with nothing changed, when the confirm is not plain).

CREATE OR REPLACE FUNCTION ledger_plain_confirm(
  p_project TEXT,
  p_reservation TEXT,
  p_actual BIGINT,
  p_now BIGINT,
  p_txn_id TEXT,
  p_source TEXT
) RETURNS TABLE (
  outcome TEXT,
  account_id TEXT,
  external_id TEXT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT,
  hold_amount_micros BIGINT,
  hold_metadata TEXT,
  hold_created_at_ms BIGINT,
  hold_expires_at_ms BIGINT,
  hold_confirm_description TEXT,
  hold_confirm_metadata TEXT
) LANGUAGE plpgsql AS $$
DECLARE
  hold reservations%ROWTYPE;
BEGIN
  SELECT * INTO hold FROM reservations r
    WHERE r.id = p_reservation AND r.project_id = p_project FOR UPDATE;
  IF hold.id IS NULL OR hold.status <> 'pending' OR hold.expires_at_ms <= p_now
     OR hold.confirm_description IS NULL OR hold.confirm_metadata IS NULL THEN
    outcome := 'other';
    RETURN NEXT;
    RETURN;
  END IF;
  RETURN QUERY SELECT d.outcome, d.account_id, d.external_id, d.balance_after_micros,
      d.created_at_ms, d.seq, hold.amount_micros, hold.metadata, hold.created_at_ms,
      hold.expires_at_ms, hold.confirm_description, hold.confirm_metadata
    FROM ledger_plain_debit(p_project, hold.account_id, true, p_actual, p_now, p_txn_id,
      hold.confirm_description, hold.confirm_metadata, p_source, hold.id, hold.amount_micros) d;
END;
$$;
