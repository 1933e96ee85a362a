-- Accounts inside accounts (docs/api.md#pools-and-members, docs/design.md#pools-and-members).
-- An account may have a parent (`parent_id`, at most 4 levels) and is funded by itself
-- (`funding` 'own') or by its pool, the nearest account above it that funds itself ('parent').
-- `tree_links` counts the account's links in a tree: 1 for a parent, plus 1 per child. Only an
-- account with none may take a plain write (the admission rule's region): every other write
-- checks each level's limits and its pool's credits on the general path.
-- A member's debit is booked on its pool's ledger, naming the member in `on_behalf_of`; the two
-- halves of a transfer share a `transfer_id`. What a spender below an account spends counts in
-- that account's limits: each spending debit of an account with a parent has one
-- `spend_levels` row per account above the spender when it was booked (a move carries no
-- past spending), which rebuilds and checks the counters of those levels.
ALTER TABLE accounts ADD COLUMN parent_id TEXT COLLATE "C";
ALTER TABLE accounts ADD COLUMN funding TEXT NOT NULL DEFAULT 'own'
  CHECK (funding IN ('own', 'parent'));
ALTER TABLE accounts ADD COLUMN tree_links INTEGER NOT NULL DEFAULT 0 CHECK (tree_links >= 0);
CREATE INDEX accounts_parent ON accounts (parent_id) WHERE parent_id IS NOT NULL;

ALTER TABLE transactions ADD COLUMN on_behalf_of TEXT COLLATE "C";
ALTER TABLE transactions ADD COLUMN transfer_id TEXT COLLATE "C";
CREATE INDEX transactions_on_behalf_of ON transactions (on_behalf_of, created_at_ms, seq)
  WHERE on_behalf_of IS NOT NULL;
CREATE INDEX transactions_transfer ON transactions (transfer_id) WHERE transfer_id IS NOT NULL;

CREATE TABLE spend_levels (
  account_id TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL,
  transaction_id TEXT COLLATE "C" NOT NULL REFERENCES transactions (id),
  amount_micros BIGINT NOT NULL CHECK (amount_micros > 0),
  PRIMARY KEY (account_id, created_at_ms, transaction_id)
);
CREATE INDEX spend_levels_transaction ON spend_levels (transaction_id);
