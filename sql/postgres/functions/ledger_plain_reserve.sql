-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_reserve. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- A reservation of p_amount, when it is plain: the hold row as the caller built it (id,
-- metadata, times, the text of the entry that will confirm it), inserted when the account may
-- go the plain way and `available` covers p_amount without the low-balance event.

CREATE OR REPLACE FUNCTION ledger_plain_reserve(
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
  -- The admission rule (ledger_plain_fits, generated from src/admission/rule.ts): a hold
  -- lowers `available` by its amount and draws no grant yet.
  IF NOT ledger_plain_fits(coalesce(info.plain, false), info.available,
       (info.acc).low_balance_threshold_micros, NULL, 0, p_amount)
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
