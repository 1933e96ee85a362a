-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_plain_account. The migrator re-applies it whenever its text changes, after the
-- numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits, times in Unix epoch milliseconds (_ms).
--
-- The account a plain write is about (by id first when p_by_id, then by externalId), locked,
-- with its `available` credits at p_now, and whether the write may go the plain way at all
-- (docs/design.md#plain-writes): no grant expiry due or held, the account in no tree (a member's
-- pool pays and every level's limits apply: docs/api.md#pools-and-members; its plain debit is
-- ledger_plain_member_debit), no automatic top-up
-- enabled (a crossing of its threshold queues an attempt: docs/api.md#automatic-top-up), and no spend limits
-- unless they are p_limits, the limits the limited plain debit has just checked in this
-- transaction (the general path, src/limits/enforce.ts, enforces every other account's limits).

DROP FUNCTION IF EXISTS ledger_plain_account(TEXT, TEXT, BOOLEAN, BIGINT);

CREATE OR REPLACE FUNCTION ledger_plain_account(p_project TEXT, p_ref TEXT, p_by_id BOOLEAN, p_now BIGINT,
  p_limits TEXT DEFAULT NULL, OUT acc accounts, OUT available BIGINT, OUT plain BOOLEAN)
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
  -- ledger_grant_work: generated from src/admission/grant-work.ts.
  plain := (acc.spend_limits IS NULL
            OR acc.spend_limits = p_limits)
       AND acc.tree_links = 0
       AND acc.auto_topup_threshold_micros IS NULL
       AND NOT ledger_grant_work(acc.id, p_now);
END;
$$;
