-- 0017 for PostgreSQL: the same change as sql/0017_spend_slots.sql. An account's spend counters
-- move into its own row (docs/design.md#spend-limits), where the limited plain debit reads them
-- and the plain move's balance UPDATE writes them (sql/postgres/functions/). Frozen once merged: changes go in a new file. Amounts in micro-credits, times in Unix epoch
-- milliseconds (_ms).
--
-- Slot i (0–9) is the i-th distinct (period, time zone) of the account's limits, in the order of
-- its `spend_limits` array (at most 10 limits, so at most 10 slots): sw<i>_start_ms is the start
-- of the window it counts, sw<i>_spent_micros what the account's spending debits booked in that
-- window. A slot whose start is not the current window's counts 0 for it. `ledger verify`
-- recomputes every slot from the ledger rows of its window.
ALTER TABLE accounts
  ADD COLUMN sw0_start_ms BIGINT,
  ADD COLUMN sw0_spent_micros BIGINT CHECK (sw0_spent_micros IS NULL OR sw0_spent_micros >= 0),
  ADD COLUMN sw1_start_ms BIGINT,
  ADD COLUMN sw1_spent_micros BIGINT CHECK (sw1_spent_micros IS NULL OR sw1_spent_micros >= 0),
  ADD COLUMN sw2_start_ms BIGINT,
  ADD COLUMN sw2_spent_micros BIGINT CHECK (sw2_spent_micros IS NULL OR sw2_spent_micros >= 0),
  ADD COLUMN sw3_start_ms BIGINT,
  ADD COLUMN sw3_spent_micros BIGINT CHECK (sw3_spent_micros IS NULL OR sw3_spent_micros >= 0),
  ADD COLUMN sw4_start_ms BIGINT,
  ADD COLUMN sw4_spent_micros BIGINT CHECK (sw4_spent_micros IS NULL OR sw4_spent_micros >= 0),
  ADD COLUMN sw5_start_ms BIGINT,
  ADD COLUMN sw5_spent_micros BIGINT CHECK (sw5_spent_micros IS NULL OR sw5_spent_micros >= 0),
  ADD COLUMN sw6_start_ms BIGINT,
  ADD COLUMN sw6_spent_micros BIGINT CHECK (sw6_spent_micros IS NULL OR sw6_spent_micros >= 0),
  ADD COLUMN sw7_start_ms BIGINT,
  ADD COLUMN sw7_spent_micros BIGINT CHECK (sw7_spent_micros IS NULL OR sw7_spent_micros >= 0),
  ADD COLUMN sw8_start_ms BIGINT,
  ADD COLUMN sw8_spent_micros BIGINT CHECK (sw8_spent_micros IS NULL OR sw8_spent_micros >= 0),
  ADD COLUMN sw9_start_ms BIGINT,
  ADD COLUMN sw9_spent_micros BIGINT CHECK (sw9_spent_micros IS NULL OR sw9_spent_micros >= 0);

-- Each account's counters move from spend_windows to its slots: for each (period, zone) of its
-- limits, the row of the latest window.
CREATE TABLE spend_slot_copy AS
WITH limit_windows AS (
  SELECT a.id AS account_id, j.value ->> 'period' AS period, j.value ->> 'timeZone' AS time_zone,
    min(j.ord) AS first_limit
  FROM accounts a, jsonb_array_elements(a.spend_limits::jsonb) WITH ORDINALITY AS j (value, ord)
  WHERE a.spend_limits IS NOT NULL
  GROUP BY 1, 2, 3
), slots AS (
  SELECT account_id, period, time_zone,
    row_number() OVER (PARTITION BY account_id ORDER BY first_limit) - 1 AS slot
  FROM limit_windows
)
SELECT DISTINCT ON (s.account_id, s.slot) s.account_id, s.slot, sw.window_start_ms,
  sw.spent_micros
FROM slots s
JOIN spend_windows sw ON sw.account_id = s.account_id AND sw.period = s.period
  AND sw.time_zone = s.time_zone
ORDER BY s.account_id, s.slot, sw.window_start_ms DESC;
UPDATE accounts SET sw0_start_ms = c.window_start_ms, sw0_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 0;
UPDATE accounts SET sw1_start_ms = c.window_start_ms, sw1_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 1;
UPDATE accounts SET sw2_start_ms = c.window_start_ms, sw2_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 2;
UPDATE accounts SET sw3_start_ms = c.window_start_ms, sw3_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 3;
UPDATE accounts SET sw4_start_ms = c.window_start_ms, sw4_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 4;
UPDATE accounts SET sw5_start_ms = c.window_start_ms, sw5_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 5;
UPDATE accounts SET sw6_start_ms = c.window_start_ms, sw6_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 6;
UPDATE accounts SET sw7_start_ms = c.window_start_ms, sw7_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 7;
UPDATE accounts SET sw8_start_ms = c.window_start_ms, sw8_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 8;
UPDATE accounts SET sw9_start_ms = c.window_start_ms, sw9_spent_micros = c.spent_micros
  FROM spend_slot_copy c WHERE c.account_id = accounts.id AND c.slot = 9;
DROP TABLE spend_slot_copy;
DROP TABLE spend_windows;
