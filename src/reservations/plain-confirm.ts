/**
 * The plain confirm (docs/design.md#plain-writes): the hold is read (its amount, account and
 * metadata never change), and when it is pending and unexpired the confirm's debit
 * (`confirmDebit`, the general path's) is tried as a plain debit (ledger/plain-debit.ts), which
 * settles the hold. On PostgreSQL that debit locks the hold and makes sure it is still pending
 * before it debits (`ledger_plain_settle`): two round trips, each committed by itself.
 */
import { type Kysely, sql } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB, ReservationRow } from "../db/schema.ts";
import type { PlainWrite } from "../db/write-path.ts";
import { type PlainDebited, plainDebit } from "../ledger/plain-debit.ts";
import { effectiveStatus } from "./schemas.ts";
import { type Confirmed, confirmDebit } from "./service.ts";

/** A reservation by id, read without a lock (the plain debit locks it, PostgreSQL). */
const holdById = prepared<{ projectId: string; reservationId: string }, ReservationRow>((db, arg) =>
  db
    .selectFrom("reservations")
    .selectAll()
    .where("id", "=", arg("reservationId"))
    .where("project_id", "=", arg("projectId"))
    .where("status", "=", sql.lit("pending")),
);

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
  const confirm = async <D extends Kysely<DB>>(
    db: D,
    nowMs: number,
    debitPlainly: (write: PlainWrite<PlainDebited>, db: D) => Promise<PlainDebited | null>,
  ): Promise<Confirmed | null> => {
    const hold = (await db.executeQuery(holdById(db, { projectId, reservationId }))).rows[0];
    if (hold === undefined || effectiveStatus(hold, nowMs) !== "pending") return null;
    const done = await debitPlainly(plainDebit(confirmDebit(hold, actualMicros)), db);
    if (done === null) return null;
    return { hold, transaction: done.row, balanceMicros: done.row.balance_after_micros };
  };
  return {
    sqlite: (trx, nowMs) => confirm(trx, nowMs, (write, db) => write.sqlite(db, nowMs)),
    postgres: (db, nowMs) => confirm(db, nowMs, (write, d) => write.postgres(d, nowMs)),
  };
}
