-- 0017: nothing on PostgreSQL. SQLite's 0017 (sql/0017_spend_slots.sql) moves an account's spend
-- counters into its own row, so that a limited deduction writes one page; PostgreSQL keeps them in
-- spend_windows, one row per window, which `ledger_plain_limited_debit` (0015) reads and upserts
-- under the account's row lock. The number is kept so that both engines' migrations keep matching
-- numbers. Frozen once merged: changes go in a new file.
SELECT 1;
