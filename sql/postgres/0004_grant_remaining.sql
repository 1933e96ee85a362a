-- 0004 for PostgreSQL: what remains of each grant, in a narrow table of its own; the same schema
-- as sql/0004_grant_remaining.sql (docs/design.md#grant-indexes). Frozen once merged.
--
-- In 0002 every debit changed a column of the wide credit_grants row that the partial indexes
-- named in their WHERE, so no debit could be a heap-only (HOT) update. Now a debit updates a
-- narrow row of credit_grant_remaining, which has no index but its key, and the partial indexes
-- name `exhausted`, which changes once in a grant's life.

CREATE TABLE credit_grant_remaining (
  seq BIGINT PRIMARY KEY REFERENCES credit_grants (seq),
  remaining_micros BIGINT NOT NULL CHECK (remaining_micros >= 0)
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
-- what remains of it never grows. The debit that takes the last micro-credit flags the grant.
CREATE FUNCTION credit_grant_remaining_starts_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.remaining_micros IS DISTINCT FROM
     (SELECT amount_micros FROM credit_grants WHERE seq = NEW.seq) THEN
    RAISE EXCEPTION 'credit_grant_remaining: a grant starts with its whole amount';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER credit_grant_remaining_starts_full BEFORE INSERT ON credit_grant_remaining
  FOR EACH ROW EXECUTE FUNCTION credit_grant_remaining_starts_full();

-- The WHEN keeps a debit from calling the function at all.
CREATE FUNCTION credit_grant_remaining_never_grows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'credit_grant_remaining: what remains of a grant never grows';
END;
$$;
CREATE TRIGGER credit_grant_remaining_never_grows BEFORE UPDATE ON credit_grant_remaining
  FOR EACH ROW
  WHEN (NEW.remaining_micros > OLD.remaining_micros OR NEW.seq IS DISTINCT FROM OLD.seq)
  EXECUTE FUNCTION credit_grant_remaining_never_grows();

CREATE FUNCTION credit_grant_remaining_exhausted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE credit_grants SET exhausted = 1 WHERE seq = NEW.seq;
  RETURN NULL;
END;
$$;
CREATE TRIGGER credit_grant_remaining_exhausted AFTER UPDATE OF remaining_micros
  ON credit_grant_remaining FOR EACH ROW
  WHEN (NEW.remaining_micros = 0 AND OLD.remaining_micros > 0)
  EXECUTE FUNCTION credit_grant_remaining_exhausted();
