-- Database code, not schema (docs/design.md#database-functions): this file is the one
-- definition of ledger_first_grant. The migrator re-applies it whenever its text changes, after
-- the numbered migrations. A change of signature drops the old one at the top of the file.
-- Amounts in micro-credits.
--
-- The account's first grant in spending order (docs/api.md#spending-order, the order of
-- src/ledger/grants.ts `spendingOrder`) that is not exhausted: its seq and what remains of it;
-- no row when it has none. The plain debits draw from it (ledger_plain_state,
-- ledger_plain_member_debit). A SQL function, which PostgreSQL inlines into their statements.

CREATE OR REPLACE FUNCTION ledger_first_grant(p_account TEXT)
RETURNS TABLE (seq BIGINT, remaining_micros BIGINT) LANGUAGE sql STABLE AS $$
  SELECT g.seq, rem.remaining_micros
    FROM credit_grants g JOIN credit_grant_remaining rem ON rem.seq = g.seq
    WHERE g.account_id = p_account AND g.exhausted = 0
    ORDER BY g.expiry_booked DESC, g.priority, coalesce(g.expires_at_ms, 9007199254740991), g.seq
    LIMIT 1;
$$;
