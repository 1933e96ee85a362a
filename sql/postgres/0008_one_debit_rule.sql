-- 0008 for PostgreSQL: one debit rule (docs/design.md#plain-writes). Frozen once merged: changes
-- go in a new file.
--
-- A confirm's entry carries the description and metadata text the service builds (the hold's
-- metadata with `reservationId` and `reservedAmount`, src/reservations/confirm-debit.ts
-- `confirmEntry`): no JSON is built in SQL. The service writes that text with the hold when it
-- makes it, so the plain confirm still takes one statement: it locks the hold and debits with
-- the hold's stored text (ledger_plain_confirm; ledger_plain_reserve stores the two new columns,
-- sql/postgres/functions/).
-- A hold made before this migration has no stored text: its confirm takes the general path,
-- which builds the text then.

ALTER TABLE reservations ADD COLUMN confirm_description TEXT COLLATE "C";
ALTER TABLE reservations ADD COLUMN confirm_metadata TEXT COLLATE "C";

