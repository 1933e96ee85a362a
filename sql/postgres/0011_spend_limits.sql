-- 0011 for PostgreSQL: the same schema as sql/0011_spend_limits.sql (spend limits per period,
-- docs/api.md#spend-limits). Frozen once merged: changes go in a new file. Amounts in
-- micro-credits, times in Unix epoch milliseconds (_ms).

-- An account's spend limits as JSON text: an array of {period, amountMicros, timeZone, soft}
-- (src/limits/limits.ts), replaced whole by create/update; null when it has none.
ALTER TABLE accounts ADD COLUMN spend_limits TEXT;

-- What an account's spending debits booked in one window of one (period, time zone), kept in the
-- same transaction as each debit; `ledger verify` recomputes every row from the ledger.
CREATE TABLE spend_windows (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  period TEXT NOT NULL CHECK (period IN ('hour', 'day', 'week', 'month')),
  time_zone TEXT NOT NULL,
  window_start_ms BIGINT NOT NULL,
  window_end_ms BIGINT NOT NULL CHECK (window_end_ms > window_start_ms),
  spent_micros BIGINT NOT NULL CHECK (spent_micros >= 0),
  PRIMARY KEY (account_id, period, time_zone, window_start_ms)
);

-- spend_limit.reached sent: once per account, limit and window.
CREATE TABLE spend_limit_reached (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  limit_key TEXT NOT NULL,
  window_start_ms BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  PRIMARY KEY (account_id, limit_key, window_start_ms)
);

