-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_state. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- What a plain write needs to know of the account p_ref (locked): ledger_plain_account (the
-- account, its `available` at p_now, whether it may go the plain way, p_limits as there) and
-- its first grant with something left in the spending order (src/ledger/grants.ts
-- `spendingOrder`, the order of the index credit_grants_spend): its seq and remaining.

DROP FUNCTION IF EXISTS ledger_plain_state(TEXT, TEXT, BOOLEAN, BIGINT);

CREATE OR REPLACE FUNCTION ledger_plain_state(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_now BIGINT,
  p_limits TEXT DEFAULT NULL, OUT acc accounts, OUT available BIGINT, OUT plain BOOLEAN, OUT first_seq BIGINT,
  OUT first_remaining BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  info RECORD;
BEGIN
  info := ledger_plain_account(p_project, p_ref, p_by_id, p_now, p_limits);
  acc := info.acc;
  available := info.available;
  plain := coalesce(info.plain, false);
  IF NOT plain THEN
    RETURN;
  END IF;
  SELECT f.seq, f.remaining_micros INTO first_seq, first_remaining
    FROM ledger_first_grant(acc.id) f;
END;
$$;
