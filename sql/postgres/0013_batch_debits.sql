-- 0013 for PostgreSQL: a batch's plain debits in one round trip (docs/design.md#batches). Frozen
-- once merged: changes go in a new file. Times in Unix epoch milliseconds (_ms).

-- Calls ledger_plain_debit (0006_fast_debit.sql, the one plain debit rule) for each debit of the
-- arrays in order, as the batch would one call at a time, and answers one row per call made,
-- with its 1-based index. It stops after the first call whose outcome is not 'applied' (that
-- call changed nothing): the caller runs that operation on its general path, then the rest.
CREATE FUNCTION ledger_plain_debits(
  p_project TEXT,
  p_refs TEXT[],
  p_by_ids BOOLEAN[],
  p_amounts BIGINT[],
  p_now BIGINT,
  p_txn_ids TEXT[],
  p_descriptions TEXT[],
  p_metadata TEXT[],
  p_sources TEXT[]
) RETURNS TABLE (
  idx INTEGER,
  outcome TEXT,
  account_id TEXT,
  external_id TEXT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_refs, 1), 0) LOOP
    r := NULL;
    SELECT * INTO r FROM ledger_plain_debit(p_project, p_refs[i], p_by_ids[i], p_amounts[i],
      p_now, p_txn_ids[i], p_descriptions[i], p_metadata[i], p_sources[i], NULL, NULL);
    idx := i;
    outcome := coalesce(r.outcome, 'other');
    account_id := r.account_id;
    external_id := r.external_id;
    balance_after_micros := r.balance_after_micros;
    created_at_ms := r.created_at_ms;
    seq := r.seq;
    RETURN NEXT;
    EXIT WHEN outcome <> 'applied';
  END LOOP;
END;
$$;
