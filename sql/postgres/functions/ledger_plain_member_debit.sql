-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_member_debit. The migrator re-applies it whenever its text changes,
-- after the numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The plain debit of an account in a tree (docs/design.md#pools-and-members): a deduction or
-- manual debit of p_amount named by a member (or by a pool with children) that its pool pays.
-- It locks the spender and each level above it, spender first and root last (the general
-- path's order, src/accounts/spending.ts), and goes on only when each level's stored limits are
-- p_path (the caller's guess, src/db/seen-limits.ts). It then reads the holds of the root's
-- tree, and the write is plain only when the admission rule puts it in its plain region
-- (src/admission/rule.ts, generated into ledger_plain_fits and ledger_plain_limit):
--
-- * the pool (the first level that funds itself) has no automatic top-up and no grant expiry
--   due or held, its available (balance less every hold it backs) covers the debit, the debit
--   keeps the pool's low-balance event out of it, and its first grant covers the debit;
-- * each limit of each level (p_levels: its level, 0 the spender; p_slots: its slot in that
--   level's row; p_starts, p_ends: its window at the caller's clock) holds the debit's time in
--   its window and neither refuses nor is reached by the debit, its held being the holds of the
--   level and of every account below it.
--
-- Then it writes what the general path would: the pool's balance and time and each level's
-- slots with the debit added (once per slot), one UPDATE per row of the path; the draw of
-- the pool's first grant; the entry on the pool on behalf of the spender (null when the spender
-- is the pool); and a spend_levels row per level above the spender. Otherwise nothing is
-- changed and the answer is 'other' (the general path runs), with stored_path (each level's
-- limits text, spender first; null when the account is in no tree) and stored_limits (the
-- spender's), for a caller whose guess was wrong.

CREATE OR REPLACE FUNCTION ledger_plain_member_debit(
  p_project TEXT,
  p_ref TEXT,
  p_by_id BOOLEAN,
  p_amount BIGINT,
  p_now BIGINT,
  p_txn_id TEXT,
  p_description TEXT,
  p_metadata TEXT,
  p_source TEXT,
  p_path TEXT[],
  p_levels INT[],
  p_slots INT[],
  p_starts BIGINT[],
  p_ends BIGINT[],
  p_amounts BIGINT[],
  p_softs BOOLEAN[]
) RETURNS TABLE (
  outcome TEXT,
  account_id TEXT,
  external_id TEXT,
  pool_id TEXT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT,
  grant_seq BIGINT,
  stored_limits TEXT,
  stored_path TEXT[]
) LANGUAGE plpgsql AS $$
DECLARE
  lv accounts;
  pool accounts;
  ids TEXT[] := '{}';
  starts BIGINT[] := '{}';
  spents BIGINT[] := '{}';
  written BOOLEAN[] := '{}';
  helds BIGINT[];
  pool_held BIGINT;
  first_seq BIGINT;
  first_remaining BIGINT;
  at_ms BIGINT;
  spent BIGINT;
  s INT;
BEGIN
  outcome := 'other';
  -- The spender, as ledger_plain_account finds it (by id, else by externalId), locked.
  IF p_by_id THEN
    SELECT * INTO lv FROM accounts a WHERE a.project_id = p_project AND a.id = p_ref FOR UPDATE;
  END IF;
  IF lv.id IS NULL THEN
    SELECT * INTO lv FROM accounts a
      WHERE a.project_id = p_project AND a.external_id = p_ref FOR UPDATE;
  END IF;
  IF lv.id IS NULL THEN
    RETURN NEXT;
    RETURN;
  END IF;
  stored_limits := lv.spend_limits;
  IF lv.tree_links = 0 THEN
    RETURN NEXT;
    RETURN;
  END IF;
  account_id := lv.id;
  external_id := lv.external_id;
  -- The path up, each level locked in turn; each level's ten slots appended to starts/spents.
  stored_path := '{}';
  LOOP
    ids := ids || lv.id;
    stored_path := stored_path || lv.spend_limits;
    starts := starts || ARRAY[lv.sw0_start_ms, lv.sw1_start_ms, lv.sw2_start_ms, lv.sw3_start_ms,
      lv.sw4_start_ms, lv.sw5_start_ms, lv.sw6_start_ms, lv.sw7_start_ms, lv.sw8_start_ms,
      lv.sw9_start_ms];
    spents := spents || ARRAY[lv.sw0_spent_micros, lv.sw1_spent_micros, lv.sw2_spent_micros,
      lv.sw3_spent_micros, lv.sw4_spent_micros, lv.sw5_spent_micros, lv.sw6_spent_micros,
      lv.sw7_spent_micros, lv.sw8_spent_micros, lv.sw9_spent_micros];
    written := written || ARRAY[false, false, false, false, false, false, false, false, false,
      false];
    IF pool.id IS NULL AND lv.funding = 'own' THEN
      pool := lv;
    END IF;
    EXIT WHEN lv.parent_id IS NULL OR array_length(ids, 1) >= 4;
    SELECT * INTO lv FROM accounts a WHERE a.id = lv.parent_id FOR UPDATE;
  END LOOP;
  IF lv.parent_id IS NOT NULL OR pool.id IS NULL OR stored_path IS DISTINCT FROM p_path THEN
    RETURN NEXT;
    RETURN;
  END IF;
  pool_id := pool.id;
  -- The holds of the root's tree, read after the root's lock: each level's subtree's, and
  -- those the pool backs (its own and those of accounts funded through it).
  -- Each step finds the children by the parent_id index (a lateral subquery kept from being
  -- merged: the function's cached plan would otherwise scan every account when the table is
  -- small), and each account's holds are summed once (MATERIALIZED).
  WITH RECURSIVE tree(id, above, payer) AS (
    SELECT lv.id, ARRAY[lv.id], lv.id
    UNION ALL
    SELECT c.id, t.above || c.id, CASE WHEN c.funding = 'own' THEN c.id ELSE t.payer END
      FROM tree t CROSS JOIN LATERAL (SELECT a.id, a.funding FROM accounts a
        WHERE a.parent_id = t.id OFFSET 0) c
  ), held AS MATERIALIZED (
    SELECT t.above, t.payer,
        (SELECT coalesce(sum(r.amount_micros), 0) FROM reservations r
          WHERE r.account_id = t.id AND r.status = 'pending' AND r.expires_at_ms > p_now) AS micros
      FROM tree t
  )
  SELECT ARRAY[coalesce(sum(h.micros) FILTER (WHERE ids[1] = ANY (h.above)), 0),
        coalesce(sum(h.micros) FILTER (WHERE ids[2] = ANY (h.above)), 0),
        coalesce(sum(h.micros) FILTER (WHERE ids[3] = ANY (h.above)), 0),
        coalesce(sum(h.micros) FILTER (WHERE ids[4] = ANY (h.above)), 0)]::BIGINT[],
      coalesce(sum(h.micros) FILTER (WHERE h.payer = pool.id), 0)::BIGINT
    INTO helds, pool_held
    FROM held h;
  SELECT f.seq, f.remaining_micros INTO first_seq, first_remaining
    FROM ledger_first_grant(pool.id) f;
  -- ledger_plain_fits and ledger_grant_work: generated from src/admission/.
  IF NOT ledger_plain_fits(pool.auto_topup_threshold_micros IS NULL
         AND NOT ledger_grant_work(pool.id, p_now),
       pool.balance_micros - pool_held, pool.low_balance_threshold_micros, first_remaining,
       p_amount, p_amount) THEN
    RETURN NEXT;
    RETURN;
  END IF;
  at_ms := greatest(pool.updated_at_ms, p_now);
  -- Each limit: its window holds the debit's time, and it is in its plain region; its spent is
  -- its slot's when the slot counts that window, else 0.
  FOR k IN 1 .. coalesce(array_length(p_levels, 1), 0) LOOP
    IF NOT (p_starts[k] <= at_ms AND at_ms < p_ends[k]) THEN
      RETURN NEXT;
      RETURN;
    END IF;
    s := p_levels[k] * 10 + p_slots[k] + 1;
    spent := CASE WHEN starts[s] = p_starts[k] THEN coalesce(spents[s], 0) ELSE 0 END;
    IF NOT ledger_plain_limit(spent, helds[p_levels[k] + 1], p_amount, p_amounts[k],
        p_softs[k]) THEN
      RETURN NEXT;
      RETURN;
    END IF;
  END LOOP;
  -- The writes. Each level's slots after the debit, once per slot (a slot counting the
  -- limit's window adds the debit, any other starts counting it).
  IF p_amount > 0 THEN
    FOR k IN 1 .. coalesce(array_length(p_levels, 1), 0) LOOP
      s := p_levels[k] * 10 + p_slots[k] + 1;
      CONTINUE WHEN written[s];
      written[s] := true;
      IF starts[s] = p_starts[k] THEN
        spents[s] := coalesce(spents[s], 0) + p_amount;
      ELSE
        starts[s] := p_starts[k];
        spents[s] := p_amount;
      END IF;
    END LOOP;
  END IF;
  -- Each row of the path written once: the pool's balance and time, and each level's slots (a
  -- level neither the pool nor limited is left alone; slots the debit does not add to keep
  -- their values). The pool's row is locked, so its balance after is the one read less the
  -- debit.
  FOR i IN 1 .. array_length(ids, 1) LOOP
    CONTINUE WHEN ids[i] <> pool.id AND (p_amount <= 0 OR stored_path[i] IS NULL);
    s := (i - 1) * 10;
    UPDATE accounts a SET
        balance_micros = a.balance_micros - CASE WHEN a.id = pool.id THEN p_amount ELSE 0 END,
        updated_at_ms = CASE WHEN a.id = pool.id THEN at_ms ELSE a.updated_at_ms END,
        sw0_start_ms = starts[s + 1], sw0_spent_micros = spents[s + 1],
        sw1_start_ms = starts[s + 2], sw1_spent_micros = spents[s + 2],
        sw2_start_ms = starts[s + 3], sw2_spent_micros = spents[s + 3],
        sw3_start_ms = starts[s + 4], sw3_spent_micros = spents[s + 4],
        sw4_start_ms = starts[s + 5], sw4_spent_micros = spents[s + 5],
        sw5_start_ms = starts[s + 6], sw5_spent_micros = spents[s + 6],
        sw6_start_ms = starts[s + 7], sw6_spent_micros = spents[s + 7],
        sw7_start_ms = starts[s + 8], sw7_spent_micros = spents[s + 8],
        sw8_start_ms = starts[s + 9], sw8_spent_micros = spents[s + 9],
        sw9_start_ms = starts[s + 10], sw9_spent_micros = spents[s + 10]
      WHERE a.id = ids[i];
  END LOOP;
  balance_after_micros := pool.balance_micros - p_amount;
  created_at_ms := at_ms;
  -- The first grant's draw and the entry.
  IF p_amount > 0 THEN
    UPDATE credit_grant_remaining rem SET remaining_micros = rem.remaining_micros - p_amount
      WHERE rem.seq = first_seq;
    grant_seq := first_seq;
  END IF;
  INSERT INTO transactions AS t (id, project_id, account_id, type, amount_micros,
      balance_after_micros, description, metadata, source, reservation_id, account_plan_id,
      created_at_ms, reversal_of, grant_seq, on_behalf_of)
    VALUES (p_txn_id, p_project, pool.id, 'debit', p_amount, balance_after_micros,
      p_description, p_metadata, p_source, NULL, NULL, at_ms, NULL, grant_seq,
      CASE WHEN pool.id = ids[1] THEN NULL ELSE ids[1] END)
    RETURNING t.seq INTO seq;
  IF p_amount > 0 THEN
    INSERT INTO spend_levels (account_id, created_at_ms, transaction_id, amount_micros)
      SELECT u.id, at_ms, p_txn_id, p_amount FROM unnest(ids[2:]) AS u(id);
  END IF;
  outcome := 'applied';
  RETURN NEXT;
END;
$$;
