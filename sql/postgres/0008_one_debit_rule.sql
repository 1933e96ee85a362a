-- 0008 for PostgreSQL: one debit rule (docs/design.md#plain-writes). Frozen once merged: changes
-- go in a new file.
--
-- A confirm's entry carries the description and metadata text the service builds (the hold's
-- metadata with `reservationId` and `reservedAmount`, src/reservations/confirm-debit.ts
-- `confirmEntry`): no JSON is built in SQL. The service writes that text with the hold when it
-- makes it, so the plain confirm still takes one statement: it locks the hold and debits with
-- the hold's stored text. `ledger_plain_confirm` of 0006, which built that metadata itself by
-- string concatenation, is replaced, and `ledger_plain_reserve` stores the two new columns.
-- A hold made before this migration has no stored text: its confirm takes the general path,
-- which builds the text then.

ALTER TABLE reservations ADD COLUMN confirm_description TEXT COLLATE "C";
ALTER TABLE reservations ADD COLUMN confirm_metadata TEXT COLLATE "C";

DROP FUNCTION ledger_plain_confirm(TEXT, TEXT, BIGINT, BIGINT, TEXT);
DROP FUNCTION ledger_plain_reserve(TEXT, TEXT, BOOLEAN, BIGINT, BIGINT, TEXT, TEXT, BIGINT);

-- A reservation of p_amount: the hold row as the caller built it (id, metadata, times, the text
-- of the entry that will confirm it). As 0006's, with the two new columns.
CREATE FUNCTION ledger_plain_reserve(
  p_project TEXT,
  p_ref TEXT,
  p_by_id BOOLEAN,
  p_amount BIGINT,
  p_now BIGINT,
  p_id TEXT,
  p_metadata TEXT,
  p_expires_at_ms BIGINT,
  p_confirm_description TEXT,
  p_confirm_metadata TEXT
) RETURNS TABLE (outcome TEXT, account_id TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  info RECORD;
BEGIN
  outcome := 'other';
  SELECT * INTO info FROM ledger_plain_account(p_project, p_ref, p_by_id, p_now);
  IF NOT coalesce(info.plain, false) OR info.available < p_amount
     OR NOT ledger_no_crossing((info.acc).low_balance_threshold_micros, info.available, p_amount)
  THEN
    RETURN NEXT;
    RETURN;
  END IF;
  INSERT INTO reservations (id, project_id, account_id, amount_micros, status, metadata,
      created_at_ms, expires_at_ms, settled_at_ms, actual_micros, transaction_id,
      confirm_description, confirm_metadata)
    VALUES (p_id, p_project, (info.acc).id, p_amount, 'pending', p_metadata, p_now,
      p_expires_at_ms, NULL, NULL, NULL, p_confirm_description, p_confirm_metadata);
  outcome := 'applied';
  account_id := (info.acc).id;
  RETURN NEXT;
END;
$$;

-- The confirm of reservation p_reservation by p_actual, when it is plain: locks the hold first
-- (the general path's lock order, hold then account); the hold is the project's, pending and
-- unexpired at p_now, and carries its confirm's text; then the plain debit of 0006 with that
-- text and p_source, which settles the hold. Answers as ledger_plain_debit, with the hold as it
-- was read ('other', with nothing changed, when the confirm is not plain).
CREATE FUNCTION ledger_plain_confirm(
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
