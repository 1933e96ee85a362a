-- 0004 for PostgreSQL: a grant's `exhausted` flag, the same schema as sql/0004_grant_exhausted.sql
-- (docs/design.md#grant-indexes). Frozen once merged.
-- The partial indexes of 0002 named remaining_micros in their WHERE, so no debit of a grant
-- could be a heap-only (HOT) update: each wrote new entries in every index of credit_grants.
-- They now name `exhausted` instead, which changes once in a grant's life, when its
-- remaining_micros reaches 0.

-- 1 exactly when remaining_micros is 0: set by the trigger below before the row is written, and
-- held by the CHECK.
ALTER TABLE credit_grants ADD COLUMN exhausted INTEGER NOT NULL DEFAULT 0;
UPDATE credit_grants SET exhausted = 1 WHERE remaining_micros = 0;
ALTER TABLE credit_grants ADD CONSTRAINT credit_grants_exhausted_check
  CHECK (exhausted IN (0, 1) AND (exhausted = 1) = (remaining_micros = 0));

CREATE FUNCTION credit_grants_exhausted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.exhausted := CASE WHEN NEW.remaining_micros = 0 THEN 1 ELSE 0 END;
  RETURN NEW;
END;
$$;
CREATE TRIGGER credit_grants_exhausted BEFORE INSERT OR UPDATE OF remaining_micros
  ON credit_grants FOR EACH ROW EXECUTE FUNCTION credit_grants_exhausted();

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
