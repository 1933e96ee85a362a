-- 0008 for SQLite: one debit rule (docs/design.md#plain-writes). Frozen once merged: changes go
-- in a new file.
--
-- A hold carries the description and metadata text of the entry that will confirm it, written
-- with the hold by the service (src/reservations/confirm-debit.ts `confirmEntry`), so that both paths
-- of a confirm store that very text (PostgreSQL's plain confirm reads it under the hold's lock,
-- in the one statement of its confirm). A hold made before this migration has none: its confirm
-- takes the general path, which builds the text then.
ALTER TABLE reservations ADD COLUMN confirm_description TEXT;
ALTER TABLE reservations ADD COLUMN confirm_metadata TEXT;
