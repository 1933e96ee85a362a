-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_fits. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The plain conditions on that state for a debit of p_amount that takes p_needed of `available`
-- (less than p_amount by the hold a confirm settles): the account may go the plain way,
-- `available` covers p_needed without the low-balance event (ledger_no_crossing), and the
-- first grant covers p_amount (a debit of 0 draws no grant).

CREATE OR REPLACE FUNCTION ledger_plain_fits(p_plain BOOLEAN, p_available BIGINT, p_threshold BIGINT,
  p_first_remaining BIGINT, p_amount BIGINT, p_needed BIGINT)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(p_plain AND p_available >= p_needed
    AND ledger_no_crossing(p_threshold, p_available, p_needed)
    AND (p_amount = 0 OR p_first_remaining >= p_amount), false);
$$;
