/**
 * The plain confirm (docs/design.md#plain-writes): when the hold is pending, unexpired and
 * carries its confirm's entry text (written with it, `confirmEntry`; a hold made before
 * confirm texts were stored with holds has none), the confirm's debit (`confirmDebit`, the general path's) is made as
 * a plain debit (ledger/plain-debit.ts), which settles the hold.
 *
 * - SQLite: the hold's read, then the plain debit, inside the unit.
 * - PostgreSQL: one call of `ledger_plain_confirm` (sql/postgres/functions/ledger_plain_confirm.sql), which
 *   locks the hold, checks it as above and makes the plain debit with the hold's stored text: one
 *   round trip, committed by itself. It answers the hold as it read it, from which the answer and
 *   the entry are built as the general path builds them.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB, ReservationRow } from "../db/schema.ts";
import type { SeenLimits } from "../db/seen-limits.ts";
import type { PlainWrite } from "../db/write-path.ts";
import { newId } from "../ids.ts";
import { type PgDebitRow, pgDebited, sqlitePlainDebit } from "../ledger/plain-debit.ts";
import { CONFIRM_SOURCE, confirmDebit } from "./confirm-debit.ts";
import { effectiveStatus } from "./schemas.ts";
import type { Confirmed } from "./service.ts";

/** A reservation by id, pending (SQLite: the unit's one writer runs nothing in between). */
const holdById = prepared<{ projectId: string; reservationId: string }, ReservationRow>((db, arg) =>
  db
    .selectFrom("reservations")
    .selectAll()
    .where("id", "=", arg("reservationId"))
    .where("project_id", "=", arg("projectId"))
    .where("status", "=", sql.lit("pending")),
);

type PgArgs = {
  projectId: string;
  reservationId: string;
  actualMicros: number;
  nowMs: number;
  txnId: string;
  source: string;
};

/** `ledger_plain_confirm`'s row: the debit's, and the hold as it was read under its lock. */
type PgRow = PgDebitRow & {
  hold_amount_micros: number;
  hold_metadata: string;
  hold_created_at_ms: number;
  hold_expires_at_ms: number;
  hold_confirm_description: string;
  hold_confirm_metadata: string;
};

const pgConfirmStatement = prepared<PgArgs, PgRow>((db, arg) => ({
  compile: () =>
    sql<PgRow>`SELECT * FROM ledger_plain_confirm(${arg("projectId")}, ${arg("reservationId")}, ${arg("actualMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("source")})`.compile(
      db,
    ),
}));

/**
 * The confirm of reservation `reservationId` by `actualMicros` on its plain path, one form per
 * engine: what the general path answers (`confirmReservation`), or null when the confirm is not
 * plain (a hold missing, ended or expired included: the general path answers those errors).
 */
export function plainConfirm(
  projectId: string,
  reservationId: string,
  actualMicros: number,
): PlainWrite<Confirmed> {
  return {
    sqlite: (trx, nowMs, seen) =>
      sqliteConfirm(trx, { projectId, reservationId, actualMicros, nowMs }, seen),
    postgres: (db, nowMs) => pgConfirm(db, { projectId, reservationId, actualMicros, nowMs }),
  };
}

/** SQLite's plain confirm inside the unit `trx` (see `plainConfirm`). */
async function sqliteConfirm(
  trx: Transaction<DB>,
  confirm: { projectId: string; reservationId: string; actualMicros: number; nowMs: number },
  seen: SeenLimits,
): Promise<Confirmed | null> {
  const { projectId, reservationId, actualMicros, nowMs } = confirm;
  const hold = (await trx.executeQuery(holdById(trx, { projectId, reservationId }))).rows[0];
  if (hold === undefined || effectiveStatus(hold, nowMs) !== "pending") return null;
  if (hold.confirm_description === null || hold.confirm_metadata === null) return null;
  const done = await sqlitePlainDebit(trx, confirmDebit(hold, actualMicros), nowMs, seen);
  if (done === null) return null;
  return { hold, transaction: done.row, balanceMicros: done.row.balance_after_micros };
}

/** PostgreSQL's plain confirm: one statement (committed by itself outside a transaction). */
async function pgConfirm(
  db: Kysely<DB>,
  confirm: { projectId: string; reservationId: string; actualMicros: number; nowMs: number },
): Promise<Confirmed | null> {
  const txnId = newId("txn");
  const args = { ...confirm, txnId, source: CONFIRM_SOURCE };
  const done = (await db.executeQuery(pgConfirmStatement(db, args))).rows[0];
  if (done?.outcome !== "applied") return null;
  const hold: ReservationRow = {
    id: confirm.reservationId,
    project_id: confirm.projectId,
    account_id: done.account_id,
    amount_micros: Number(done.hold_amount_micros),
    status: "pending",
    metadata: done.hold_metadata,
    created_at_ms: Number(done.hold_created_at_ms),
    expires_at_ms: Number(done.hold_expires_at_ms),
    settled_at_ms: null,
    actual_micros: null,
    transaction_id: null,
    confirm_description: done.hold_confirm_description,
    confirm_metadata: done.hold_confirm_metadata,
  };
  const debited = pgDebited(confirmDebit(hold, confirm.actualMicros), txnId, confirm.nowMs, done);
  return { hold, transaction: debited.row, balanceMicros: debited.row.balance_after_micros };
}
