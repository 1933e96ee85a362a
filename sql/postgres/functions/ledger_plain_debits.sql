-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_debits. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- A batch's run of plain debits (docs/design.md#batches): answers one row per call made
-- (1-based idx; the leading calls applied; after them, when one is not plain, its row 'other',
-- having changed nothing), made per account instead of per call:
-- 1. lock the accounts the calls name, in id order (the batch has already: src/batch/locks.ts),
--    and resolve each call's account as ledger_plain_account does (by id first when p_by_ids,
--    then by externalId), so that one account named both ways is one group;
-- 2. read each account's state once (ledger_plain_state) and find the first call whose
--    account's running sum up to it (in call order) is not plain (ledger_plain_fits): the calls
--    one at a time would find that very call not plain first (or, when the first grant runs out
--    exactly before it, would draw the next grant, a write the general path makes as well; the
--    service runs this call on the general path);
-- 3. make one plain move per account for the sum of its calls before that one (the move checks
--    again: a refusal there raises, and the service runs the batch again without grouping);
-- 4. insert the entries of those calls in one statement in call order (so `seq` follows the
--    operations), each with the account's running balance after it and the move's time.

CREATE OR REPLACE FUNCTION ledger_plain_debits(
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
  n INTEGER := coalesce(array_length(p_refs, 1), 0);
  accs TEXT[];
  first_other INTEGER;
  g RECORD;
  st RECORD;
  m RECORD;
  st_ids TEXT[] := '{}';
  st_plain BOOLEAN[] := '{}';
  st_available BIGINT[] := '{}';
  st_threshold BIGINT[] := '{}';
  st_first BIGINT[] := '{}';
  mv_ids TEXT[] := '{}';
  mv_ext TEXT[] := '{}';
  mv_after BIGINT[] := '{}';
  mv_at BIGINT[] := '{}';
  mv_sum BIGINT[] := '{}';
  mv_grant BIGINT[] := '{}';
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  -- 1. The locks, then each call's account (null: none).
  PERFORM 1 FROM accounts a
    WHERE a.project_id = p_project AND (a.id = ANY (p_refs) OR a.external_id = ANY (p_refs))
    ORDER BY a.id FOR UPDATE;
  SELECT array_agg(coalesce(by_id.id, by_ext.id) ORDER BY c.i) INTO accs
    FROM unnest(p_refs, p_by_ids) WITH ORDINALITY AS c(ref, by_id, i)
    LEFT JOIN accounts by_id ON c.by_id AND by_id.project_id = p_project AND by_id.id = c.ref
    LEFT JOIN accounts by_ext ON by_ext.project_id = p_project AND by_ext.external_id = c.ref;
  -- 2. Each account's state, then the first call not plain (n + 1: none).
  FOR g IN SELECT DISTINCT u.acc FROM unnest(accs) AS u(acc) WHERE u.acc IS NOT NULL
    ORDER BY u.acc
  LOOP
    SELECT * INTO st FROM ledger_plain_state(p_project, g.acc, true, p_now);
    st_ids := st_ids || g.acc;
    st_plain := st_plain || st.plain;
    st_available := st_available || st.available;
    st_threshold := st_threshold || (st.acc).low_balance_threshold_micros;
    st_first := st_first || st.first_remaining;
  END LOOP;
  SELECT coalesce(min(r.i), n + 1) INTO first_other
    FROM (SELECT c.acc, c.i,
              sum(p_amounts[c.i]) OVER (PARTITION BY c.acc ORDER BY c.i)::BIGINT AS running
            FROM unnest(accs) WITH ORDINALITY AS c(acc, i)) r
    LEFT JOIN unnest(st_ids, st_plain, st_available, st_threshold, st_first)
      AS s(id, plain, available, threshold, first_remaining) ON s.id = r.acc
    WHERE NOT ledger_plain_fits(s.plain, s.available, s.threshold, s.first_remaining,
      r.running, r.running);
  -- 3. One move per account for its calls before that one.
  FOR g IN SELECT c.acc, sum(p_amounts[c.i])::BIGINT AS total
    FROM unnest(accs) WITH ORDINALITY AS c(acc, i) WHERE c.i < first_other
    GROUP BY c.acc ORDER BY c.acc
  LOOP
    SELECT * INTO m FROM ledger_plain_move(p_project, g.acc, true, g.total, g.total, p_now);
    IF m.account_id IS NULL THEN
      RAISE EXCEPTION 'ledger_plain_debits: the plain move of account % was refused', g.acc;
    END IF;
    mv_ids := mv_ids || m.account_id;
    mv_ext := mv_ext || m.external_id;
    mv_after := mv_after || m.balance_after_micros;
    mv_at := mv_at || m.created_at_ms;
    mv_sum := mv_sum || g.total;
    mv_grant := mv_grant || m.first_seq;
  END LOOP;
  -- 4. The entries, in call order, and each applied call's row.
  RETURN QUERY
    WITH calls AS (
      SELECT c.acc, c.i, p_amounts[c.i] AS amount,
          sum(p_amounts[c.i]) OVER (PARTITION BY c.acc ORDER BY c.i)::BIGINT AS running
        FROM unnest(accs) WITH ORDINALITY AS c(acc, i) WHERE c.i < first_other
    ), applied AS (
      SELECT calls.i, calls.acc, calls.amount, mv.ext, mv.at_ms,
          mv.bal + mv.total - calls.running AS bal,
          CASE WHEN calls.amount > 0 THEN mv.grant_seq END AS grant_seq
        FROM calls JOIN unnest(mv_ids, mv_ext, mv_after, mv_at, mv_sum, mv_grant)
          AS mv(id, ext, bal, at_ms, total, grant_seq) ON mv.id = calls.acc
    ), entries AS (
      INSERT INTO transactions AS t (id, project_id, account_id, type, amount_micros,
          balance_after_micros, description, metadata, source, reservation_id,
          account_plan_id, created_at_ms, reversal_of, grant_seq)
        SELECT p_txn_ids[r.i], p_project, r.acc, 'debit', r.amount, r.bal,
            p_descriptions[r.i], p_metadata[r.i], p_sources[r.i], NULL, NULL, r.at_ms, NULL,
            r.grant_seq
          FROM applied r ORDER BY r.i
        RETURNING t.id, t.seq
    )
    SELECT r.i::INTEGER, 'applied'::TEXT, r.acc, r.ext, r.bal, r.at_ms, e.seq
      FROM applied r JOIN entries e ON e.id = p_txn_ids[r.i]
      ORDER BY r.i;
  IF first_other <= n THEN
    idx := first_other;
    outcome := 'other';
    account_id := NULL;
    external_id := NULL;
    balance_after_micros := NULL;
    created_at_ms := NULL;
    seq := NULL;
    RETURN NEXT;
  END IF;
END;
$$;
