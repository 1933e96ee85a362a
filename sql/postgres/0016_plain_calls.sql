-- 0016 for PostgreSQL: the single plain debit as cheap to call as before 0014. Frozen once
-- merged: changes go in a new file.
--
-- 0014 split the plain debit into ledger_plain_state, ledger_plain_move and the entry, each
-- calling the next as `SELECT * INTO … FROM f(…)`: a query of its own per level (planned once,
-- but run through the executor, its row materialised), three levels deep where 0006 had one.
-- That cost a single deduction about 15 µs of server time (docs/benchmarks.md, issue 29). Here the
-- same three functions, with the same signatures, rules and answers, take the next level's answer
-- by assignment (`r := f(…)`), which PL/pgSQL evaluates as an expression, without the executor.
-- Nothing else changes; ledger_plain_debits (0014) and the callers of ledger_plain_debit keep
-- calling these functions by name.

-- The account's plain state, as 0014's: the account (locked), its `available` at p_now, whether
-- it may go the plain way (ledger_plain_account), and its first grant in the spending order.
CREATE OR REPLACE FUNCTION ledger_plain_state(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_now BIGINT,
  OUT acc accounts, OUT available BIGINT, OUT plain BOOLEAN, OUT first_seq BIGINT,
  OUT first_remaining BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  info RECORD;
BEGIN
  info := ledger_plain_account(p_project, p_ref, p_by_id, p_now);
  acc := info.acc;
  available := info.available;
  plain := coalesce(info.plain, false);
  IF NOT plain THEN
    RETURN;
  END IF;
  SELECT g.seq, rem.remaining_micros INTO first_seq, first_remaining
    FROM credit_grants g JOIN credit_grant_remaining rem ON rem.seq = g.seq
    WHERE g.account_id = acc.id AND g.exhausted = 0
    ORDER BY g.expiry_booked DESC, g.priority, coalesce(g.expires_at_ms, 9007199254740991), g.seq
    LIMIT 1;
END;
$$;

-- The plain move, as 0014's: when the plain conditions hold (ledger_plain_fits), lowers the
-- balance, stamps the account and draws the first grant down; else a null account_id.
CREATE OR REPLACE FUNCTION ledger_plain_move(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_amount BIGINT,
  p_needed BIGINT, p_now BIGINT,
  OUT account_id TEXT, OUT external_id TEXT, OUT balance_after_micros BIGINT,
  OUT created_at_ms BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  st RECORD;
BEGIN
  st := ledger_plain_state(p_project, p_ref, p_by_id, p_now);
  IF NOT ledger_plain_fits(st.plain, st.available, (st.acc).low_balance_threshold_micros,
       st.first_remaining, p_amount, p_needed) THEN
    RETURN;
  END IF;
  UPDATE accounts a SET balance_micros = a.balance_micros - p_amount,
      updated_at_ms = greatest(a.updated_at_ms, p_now)
    WHERE a.id = (st.acc).id
    RETURNING a.balance_micros, a.updated_at_ms INTO balance_after_micros, created_at_ms;
  IF p_amount > 0 THEN
    UPDATE credit_grant_remaining rem SET remaining_micros = rem.remaining_micros - p_amount
      WHERE rem.seq = st.first_seq;
  END IF;
  account_id := (st.acc).id;
  external_id := (st.acc).external_id;
END;
$$;

-- The plain debit, as 0014's (0006's signature and answer): the move, the entry, and the
-- settlement of the hold p_hold when set.
CREATE OR REPLACE FUNCTION ledger_plain_debit(
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
  m RECORD;
BEGIN
  outcome := 'other';
  m := ledger_plain_move(p_project, p_ref, p_by_id, p_amount,
    p_amount - coalesce(p_hold_micros, 0), p_now);
  IF m.account_id IS NULL THEN
    RETURN NEXT;
    RETURN;
  END IF;
  INSERT INTO transactions AS t (id, project_id, account_id, type, amount_micros,
      balance_after_micros, description, metadata, source, reservation_id, account_plan_id,
      created_at_ms)
    VALUES (p_txn_id, p_project, m.account_id, 'debit', p_amount, m.balance_after_micros,
      p_description, p_metadata, p_source, p_hold, NULL, m.created_at_ms)
    RETURNING t.seq INTO seq;
  IF p_hold IS NOT NULL THEN
    UPDATE reservations r SET status = 'confirmed', settled_at_ms = p_now,
        actual_micros = p_amount, transaction_id = p_txn_id
      WHERE r.id = p_hold AND r.status = 'pending';
  END IF;
  outcome := 'applied';
  account_id := m.account_id;
  external_id := m.external_id;
  balance_after_micros := m.balance_after_micros;
  created_at_ms := m.created_at_ms;
  RETURN NEXT;
END;
$$;
