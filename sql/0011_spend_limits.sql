-- 0011: spend limits per period (docs/api.md#spend-limits). Frozen once merged: changes go in a
-- new file. Amounts in micro-credits, times in Unix epoch milliseconds (_ms).

-- An account's spend limits as JSON text: an array of {period, amountMicros, timeZone, soft}
-- (src/limits/limits.ts), replaced whole by create/update; null when it has none. A debit or a
-- reservation is plain (docs/design.md#plain-writes) only on an account without limits.
ALTER TABLE accounts ADD COLUMN spend_limits TEXT;

-- What an account's spending debits (deductions, manual debits, reservation confirms) booked in
-- one window of one (period, time zone), kept in the same unit as each debit so that a write never
-- sums a window's rows. `ledger verify` recomputes every row from the ledger rows whose
-- created_at_ms lies in [window_start_ms, window_end_ms).
CREATE TABLE spend_windows (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  period TEXT NOT NULL CHECK (period IN ('hour', 'day', 'week', 'month')),
  time_zone TEXT NOT NULL,
  window_start_ms INTEGER NOT NULL,
  window_end_ms INTEGER NOT NULL CHECK (window_end_ms > window_start_ms),
  spent_micros INTEGER NOT NULL CHECK (spent_micros >= 0),
  PRIMARY KEY (account_id, period, time_zone, window_start_ms)
);

-- spend_limit.reached sent: once per account, limit (its period, amount, zone and softness as
-- `limit_key`) and window.
CREATE TABLE spend_limit_reached (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  limit_key TEXT NOT NULL,
  window_start_ms INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (account_id, limit_key, window_start_ms)
);
