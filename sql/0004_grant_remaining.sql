-- 0004: what remains of each grant, in a narrow table of its own (docs/design.md#grant-indexes).
-- Frozen once merged. Amounts in micro-credits.
--
-- Every debit changes what remains of a grant. In 0002 that was a column of the wide
-- credit_grants row, which the partial indexes also named in their WHERE: a debit rewrote the
-- grant's row (about 160 bytes, 25 to a page) and its entry in credit_grants_spend. Now a debit
-- rewrites one 10-byte row of credit_grant_remaining (hundreds to a page, so a batch of debits
-- shares few pages), and the partial indexes name `exhausted`, which changes once in a grant's
-- life, when its last micro-credit is taken.

CREATE TABLE credit_grant_remaining (
  seq INTEGER PRIMARY KEY REFERENCES credit_grants (seq),
  remaining_micros INTEGER NOT NULL CHECK (remaining_micros >= 0)
);
INSERT INTO credit_grant_remaining (seq, remaining_micros)
SELECT seq, remaining_micros FROM credit_grants;

-- 1 once nothing remains of the grant (what remains never grows, so it stays 1).
ALTER TABLE credit_grants ADD COLUMN exhausted INTEGER NOT NULL DEFAULT 0
  CHECK (exhausted IN (0, 1));
UPDATE credit_grants SET exhausted = 1 WHERE remaining_micros = 0;

DROP INDEX credit_grants_spend;
DROP INDEX credit_grants_account_due;
DROP INDEX credit_grants_due;
DROP INDEX credit_grants_held;
ALTER TABLE credit_grants DROP COLUMN remaining_micros;

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

-- 0 <= remaining <= amount, held by the database: a grant starts with all of its amount, and
-- what remains of it never grows. A CHECK cannot name another table's column, so triggers do.
CREATE TRIGGER credit_grant_remaining_starts_full BEFORE INSERT ON credit_grant_remaining
  WHEN NEW.remaining_micros IS NOT (SELECT amount_micros FROM credit_grants WHERE seq = NEW.seq)
BEGIN
  SELECT RAISE(ABORT, 'credit_grant_remaining: a grant starts with its whole amount');
END;
CREATE TRIGGER credit_grant_remaining_never_grows BEFORE UPDATE ON credit_grant_remaining
  WHEN NEW.remaining_micros > OLD.remaining_micros OR NEW.seq IS NOT OLD.seq
BEGIN
  SELECT RAISE(ABORT, 'credit_grant_remaining: what remains of a grant never grows');
END;
-- The debit that takes the last micro-credit flags the grant, in the same statement.
CREATE TRIGGER credit_grant_remaining_exhausted AFTER UPDATE OF remaining_micros
  ON credit_grant_remaining
  WHEN NEW.remaining_micros = 0 AND OLD.remaining_micros > 0
BEGIN
  UPDATE credit_grants SET exhausted = 1 WHERE seq = NEW.seq;
END;
