-- Reversals (docs/api.md#reversals, docs/design.md#reversals). A reversal is a transaction of
-- the opposite type that names the one it reverses (`reversal_of`); the original is never
-- changed. A debit records the grants it drew from, so that its reversal returns the credits
-- there: `grant_seq` when it drew from one grant (every plain debit), else one `debit_draws` row
-- per grant, in the order drawn. What remains of a grant may now grow back (a debit reversed),
-- never past the grant's amount; a grant that grows back from 0 is no longer exhausted.
-- The two columns carry no foreign key: every debit writes them, and a key's check would cost
-- each insert a lookup (on PostgreSQL a trigger and a share lock on the grant's row). `ledger
-- verify` checks that each names a transaction, or a grant of the same account.
ALTER TABLE transactions ADD COLUMN reversal_of TEXT;
ALTER TABLE transactions ADD COLUMN grant_seq INTEGER;
CREATE INDEX transactions_reversal_of ON transactions (reversal_of)
  WHERE reversal_of IS NOT NULL;

CREATE TABLE debit_draws (
  transaction_id TEXT NOT NULL REFERENCES transactions (id),
  draw_index INTEGER NOT NULL CHECK (draw_index >= 0),
  grant_seq INTEGER NOT NULL REFERENCES credit_grants (seq),
  drawn_micros INTEGER NOT NULL CHECK (drawn_micros > 0),
  PRIMARY KEY (transaction_id, draw_index)
) WITHOUT ROWID;

DROP TRIGGER credit_grant_remaining_never_grows;
CREATE TRIGGER credit_grant_remaining_within_amount BEFORE UPDATE ON credit_grant_remaining
  WHEN NEW.seq IS NOT OLD.seq OR (NEW.remaining_micros > OLD.remaining_micros
    AND NEW.remaining_micros > (SELECT amount_micros FROM credit_grants WHERE seq = NEW.seq))
BEGIN
  SELECT RAISE(ABORT, 'credit_grant_remaining: what remains of a grant never passes its amount');
END;
CREATE TRIGGER credit_grant_remaining_regrown AFTER UPDATE OF remaining_micros
  ON credit_grant_remaining
  WHEN NEW.remaining_micros > 0 AND OLD.remaining_micros = 0
BEGIN
  UPDATE credit_grants SET exhausted = 0 WHERE seq = NEW.seq;
END;
