-- 0006 for PostgreSQL: the common debit and the common reservation, each in one statement
-- (docs/design.md#plain-writes). Frozen once merged: changes go in a new file.
--
-- Each function takes the account's row lock first and reads after it (every statement of a
-- plpgsql function sees the commits made before it starts, so what it reads under the lock is
-- current), then writes only when the write is plain: the account exists, `available` covers
-- it, no grant expiry is due or held, it does not take `available` below the account's
-- low-balance threshold, and (a debit) the first grant in spending order covers it. Then it does
-- what the service's general path does for such a write. Otherwise it changes nothing and
-- answers 'other', and the service takes its general path in the same transaction, which also
-- answers the errors (a missing account, 402) and books expiries and low-balance events.
--
-- p_by_id: the reference has the form of an internal id (looked up by id first, then by
-- externalId, as the service's lookup does). Amounts in micro-credits, times in epoch ms.

-- The account a plain write is about, locked, with what it needs to decide: its available
-- credits at p_now, and whether the write may go the plain way at all (no expiry due or held).
CREATE FUNCTION ledger_plain_account(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_now BIGINT,
  OUT acc accounts, OUT available BIGINT, OUT plain BOOLEAN)
LANGUAGE plpgsql AS $$
BEGIN
  plain := false;
  IF p_by_id THEN
    SELECT * INTO acc FROM accounts a WHERE a.project_id = p_project AND a.id = p_ref FOR UPDATE;
  END IF;
  IF acc.id IS NULL THEN
    SELECT * INTO acc FROM accounts a
      WHERE a.project_id = p_project AND a.external_id = p_ref FOR UPDATE;
  END IF;
  IF acc.id IS NULL THEN
    RETURN;
  END IF;
  SELECT acc.balance_micros - coalesce(sum(r.amount_micros), 0) INTO available
    FROM reservations r
    WHERE r.account_id = acc.id AND r.status = 'pending' AND r.expires_at_ms > p_now;
  plain := NOT EXISTS (SELECT 1 FROM credit_grants d WHERE d.account_id = acc.id
             AND d.exhausted = 0 AND d.expiry_booked = 0 AND d.expires_at_ms IS NOT NULL
             AND d.expires_at_ms <= p_now)
       AND NOT EXISTS (SELECT 1 FROM credit_grants h WHERE h.account_id = acc.id
             AND h.exhausted = 0 AND h.expiry_booked = 1);
END;
$$;

-- True when a write that lowers `available` from p_before by p_lowered keeps the low-balance
-- event out of it: no threshold, already below it, or still at or above it after.
CREATE FUNCTION ledger_no_crossing(p_threshold BIGINT, p_before BIGINT, p_lowered BIGINT)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT p_threshold IS NULL OR p_before < p_threshold OR p_before - p_lowered >= p_threshold;
$$;

-- A debit of p_amount: a deduction or manual debit, or (p_hold set) the confirm of that pending
-- hold of p_hold_micros, which the caller has locked and checked.
CREATE FUNCTION ledger_plain_debit(
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
  info RECORD;
  needed BIGINT := p_amount - coalesce(p_hold_micros, 0);
  first_seq BIGINT;
  first_remaining BIGINT;
BEGIN
  outcome := 'other';
  SELECT * INTO info FROM ledger_plain_account(p_project, p_ref, p_by_id, p_now);
  IF NOT coalesce(info.plain, false) OR info.available < needed
     OR NOT ledger_no_crossing((info.acc).low_balance_threshold_micros, info.available, needed)
  THEN
    RETURN NEXT;
    RETURN;
  END IF;
  IF p_amount > 0 THEN
    -- The spending order, in the terms of the index credit_grants_spend.
    SELECT g.seq, rem.remaining_micros INTO first_seq, first_remaining
      FROM credit_grants g JOIN credit_grant_remaining rem ON rem.seq = g.seq
      WHERE g.account_id = (info.acc).id AND g.exhausted = 0
      ORDER BY g.expiry_booked DESC, g.priority, coalesce(g.expires_at_ms, 9007199254740991), g.seq
      LIMIT 1;
    IF first_remaining IS NULL OR first_remaining < p_amount THEN
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;
  UPDATE accounts a SET balance_micros = a.balance_micros - p_amount,
      updated_at_ms = greatest(a.updated_at_ms, p_now)
    WHERE a.id = (info.acc).id
    RETURNING a.balance_micros, a.updated_at_ms INTO balance_after_micros, created_at_ms;
  INSERT INTO transactions AS t (id, project_id, account_id, type, amount_micros,
      balance_after_micros, description, metadata, source, reservation_id, account_plan_id,
      created_at_ms)
    VALUES (p_txn_id, p_project, (info.acc).id, 'debit', p_amount, balance_after_micros,
      p_description, p_metadata, p_source, p_hold, NULL, created_at_ms)
    RETURNING t.seq INTO seq;
  IF p_amount > 0 THEN
    UPDATE credit_grant_remaining rem SET remaining_micros = rem.remaining_micros - p_amount
      WHERE rem.seq = first_seq;
  END IF;
  IF p_hold IS NOT NULL THEN
    UPDATE reservations r SET status = 'confirmed', settled_at_ms = p_now,
        actual_micros = p_amount, transaction_id = p_txn_id
      WHERE r.id = p_hold AND r.status = 'pending';
  END IF;
  outcome := 'applied';
  account_id := (info.acc).id;
  external_id := (info.acc).external_id;
  RETURN NEXT;
END;
$$;

-- A reservation of p_amount: the hold row as the caller built it (id, metadata, times).
CREATE FUNCTION ledger_plain_reserve(
  p_project TEXT,
  p_ref TEXT,
  p_by_id BOOLEAN,
  p_amount BIGINT,
  p_now BIGINT,
  p_id TEXT,
  p_metadata TEXT,
  p_expires_at_ms BIGINT
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
      created_at_ms, expires_at_ms, settled_at_ms, actual_micros, transaction_id)
    VALUES (p_id, p_project, (info.acc).id, p_amount, 'pending', p_metadata, p_now,
      p_expires_at_ms, NULL, NULL, NULL);
  outcome := 'applied';
  account_id := (info.acc).id;
  RETURN NEXT;
END;
$$;

-- The confirm of reservation p_reservation by p_actual, when it is plain: the hold is the
-- project's, pending and unexpired at p_now (locked first, as the service's confirm does), its
-- metadata names neither `reservationId` nor `reservedAmount` (the entry's metadata is the
-- hold's with those two added, as the service builds it), and the debit is plain (see
-- ledger_plain_debit). Answers the hold's account and amount with the entry.
CREATE FUNCTION ledger_plain_confirm(
  p_project TEXT,
  p_reservation TEXT,
  p_actual BIGINT,
  p_now BIGINT,
  p_txn_id TEXT
) RETURNS TABLE (
  outcome TEXT,
  account_id TEXT,
  reserved_micros BIGINT,
  balance_after_micros BIGINT,
  created_at_ms BIGINT,
  seq BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
  hold reservations%ROWTYPE;
  meta TEXT;
  debited RECORD;
BEGIN
  outcome := 'other';
  SELECT * INTO hold FROM reservations r
    WHERE r.id = p_reservation AND r.project_id = p_project FOR UPDATE;
  IF hold.id IS NULL OR hold.status <> 'pending' OR hold.expires_at_ms <= p_now
     OR hold.metadata::jsonb ? 'reservationId' OR hold.metadata::jsonb ? 'reservedAmount'
     OR left(hold.metadata, 1) <> '{' OR right(hold.metadata, 1) <> '}' THEN
    RETURN NEXT;
    RETURN;
  END IF;
  meta := CASE WHEN hold.metadata = '{}' THEN '{' ELSE left(hold.metadata, -1) || ',' END
    || '"reservationId":"' || hold.id || '","reservedAmount":'
    || trim_scale(hold.amount_micros::numeric / 1000000)::text || '}';
  SELECT * INTO debited FROM ledger_plain_debit(p_project, hold.account_id, true, p_actual,
    p_now, p_txn_id, 'Reservation ' || hold.id || ' confirmed', meta, 'reservation', hold.id,
    hold.amount_micros);
  IF debited.outcome = 'applied' THEN
    outcome := 'applied';
    account_id := hold.account_id;
    reserved_micros := hold.amount_micros;
    balance_after_micros := debited.balance_after_micros;
    created_at_ms := debited.created_at_ms;
    seq := debited.seq;
  END IF;
  RETURN NEXT;
END;
$$;
