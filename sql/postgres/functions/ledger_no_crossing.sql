-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_no_crossing. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- True when a write that lowers `available` from p_before by p_lowered keeps the low-balance
-- event out of it: no threshold, already below it, or still at or above it after
-- (docs/api.md#low-balance-alerts).

CREATE OR REPLACE FUNCTION ledger_no_crossing(p_threshold BIGINT, p_before BIGINT, p_lowered BIGINT)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT p_threshold IS NULL OR p_before < p_threshold OR p_before - p_lowered >= p_threshold;
$$;
