-- 0008 for PostgreSQL: one debit rule (docs/design.md#plain-writes). Frozen once merged: changes
-- go in a new file.
--
-- A confirm's entry carries the description and metadata the service builds (the hold's
-- metadata with `reservationId` and `reservedAmount`, src/reservations/service.ts
-- `confirmDebit`), passed as parameters, as every other debit's: no JSON is built in SQL. So
-- `ledger_plain_confirm` (0006), which built that metadata itself, goes, and the plain confirm is
-- the service's read of the hold (its amount, account and metadata never change) followed by
-- `ledger_plain_settle`.

DROP FUNCTION ledger_plain_confirm(TEXT, TEXT, BIGINT, BIGINT, TEXT);

-- The plain debit that confirms the hold p_hold: locks the hold first (the general path's lock
-- order, hold then account), and when it is still pending makes the plain debit of 0006 with the
-- same arguments, which settles it. The service read the hold pending and unexpired at p_now and
-- built the entry from it; of its columns only the status can have changed since, so the status
-- is all this checks. Answers as ledger_plain_debit ('other' with nothing changed when the hold
-- ended in between or the debit is not plain).
CREATE FUNCTION ledger_plain_settle(
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
  p_hold_micros BIGINT
) RETURNS TABLE (
  outcome TEXT,
  account_id TEXT,
  external_id TEXT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
  hold_status TEXT;
BEGIN
  SELECT r.status INTO hold_status FROM reservations r
    WHERE r.id = p_hold AND r.project_id = p_project FOR UPDATE;
  IF hold_status IS DISTINCT FROM 'pending' THEN
    outcome := 'other';
    RETURN NEXT;
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ledger_plain_debit(p_project, p_ref, p_by_id, p_amount, p_now,
    p_txn_id, p_description, p_metadata, p_source, p_hold, p_hold_micros);
END;
$$;
