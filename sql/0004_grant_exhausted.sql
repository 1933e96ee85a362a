-- 0004: a grant's `exhausted` flag (docs/design.md#grant-indexes). Frozen once merged.
-- The partial indexes of 0002 named remaining_micros in their WHERE, so every debit rewrote the
-- grant's entry in credit_grants_spend (and, for a grant with an expiry, in the two due
-- indexes) besides its table row: an index page more in the write-ahead log per debit. They now
-- name `exhausted` instead, which changes once in a grant's life, when its remaining_micros
-- reaches 0; a decrement then writes the table row only.

-- 1 once remaining_micros is 0 (a grant's remaining never grows, so it stays 1). Kept by the
-- trigger below, checked by `ledger verify`.
ALTER TABLE credit_grants ADD COLUMN exhausted INTEGER NOT NULL DEFAULT 0
  CHECK (exhausted IN (0, 1));
UPDATE credit_grants SET exhausted = 1 WHERE remaining_micros = 0;

-- SQLite's CHECK cannot see a later statement, so the flag follows remaining_micros by trigger:
-- in the same statement's transaction, for every change of remaining_micros whatever wrote it.
CREATE TRIGGER credit_grants_exhausted AFTER UPDATE OF remaining_micros ON credit_grants
  WHEN NEW.exhausted <> (NEW.remaining_micros = 0)
BEGIN
  UPDATE credit_grants SET exhausted = (NEW.remaining_micros = 0) WHERE seq = NEW.seq;
END;

DROP INDEX credit_grants_spend;
DROP INDEX credit_grants_account_due;
DROP INDEX credit_grants_due;
DROP INDEX credit_grants_held;
-- The same indexes as 0002, on `exhausted = 0` (a grant with something left).
CREATE INDEX credit_grants_spend ON credit_grants
  (account_id, expiry_booked DESC, priority, coalesce(expires_at_ms, 9007199254740991), seq)
  WHERE exhausted = 0;
CREATE INDEX credit_grants_account_due ON credit_grants (account_id, expires_at_ms)
  WHERE exhausted = 0 AND expiry_booked = 0 AND expires_at_ms IS NOT NULL;
CREATE INDEX credit_grants_due ON credit_grants (expires_at_ms)
  WHERE exhausted = 0 AND expiry_booked = 0 AND expires_at_ms IS NOT NULL;
CREATE INDEX credit_grants_held ON credit_grants (account_id)
  WHERE exhausted = 0 AND expiry_booked = 1;
