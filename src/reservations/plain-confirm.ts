/**
 * The plain confirm on PostgreSQL (docs/design.md#plain-writes): one call of
 * `ledger_plain_confirm` (sql/postgres/0006_fast_debit.sql) locks the hold, checks it is pending
 * and unexpired, builds the entry's metadata as the service does, and makes the plain debit of
 * ledger/plain-debit.ts with the hold settled: one round trip instead of the hold's read and the
 * debit's call. On SQLite, where statements are not round trips, the confirm reads the hold and
 * then tries the plain debit (service.ts).
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { engineOf } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { oneStatement, type StatementWrite } from "../db/write-path.ts";
import { newId } from "../ids.ts";

type Row = {
  outcome: "applied" | "other";
  account_id: string;
  reserved_micros: number;
  balance_after_micros: number;
  created_at_ms: number;
  seq: number;
};

type Args = {
  projectId: string;
  reservationId: string;
  actualMicros: number;
  nowMs: number;
  txnId: string;
};

const pgConfirm = prepared<Args, Row>((db, arg) => ({
  compile: () =>
    sql<Row>`SELECT * FROM ledger_plain_confirm(${arg("projectId")}, ${arg("reservationId")}, ${arg("actualMicros")}, ${arg("nowMs")}, ${arg("txnId")})`.compile(
      db,
    ),
}));

/** A confirm done in one statement: the hold's amount, its debit and the balance after. */
export interface PlainConfirmed {
  hold: { id: string; amount_micros: number };
  transaction: { id: string };
  balanceMicros: number;
}

/** The plain confirm's statement and what its row means. */
function pgStatement(projectId: string, reservationId: string, actualMicros: number) {
  const txnId = newId("txn");
  return {
    statement: (db: Kysely<DB>, nowMs: number) =>
      pgConfirm(db, { projectId, reservationId, actualMicros, nowMs, txnId }),
    result: (rows: Row[]): PlainConfirmed | null => {
      const done = rows[0];
      if (done?.outcome !== "applied") return null;
      return {
        hold: { id: reservationId, amount_micros: Number(done.reserved_micros) },
        transaction: { id: txnId },
        balanceMicros: Number(done.balance_after_micros),
      };
    },
  };
}

/**
 * The plain confirm as a write of its own, one statement outside any transaction
 * (`WriteQueue.runStatement`), for a request without an Idempotency-Key. Only PostgreSQL runs
 * it; SQLite's queue declines it.
 */
export function plainConfirmStatement(
  projectId: string,
  reservationId: string,
  actualMicros: number,
): StatementWrite<PlainConfirmed> {
  const write = pgStatement(projectId, reservationId, actualMicros);
  return oneStatement(write.statement, write.result);
}

/**
 * Confirms the hold in one statement when the engine has it (PostgreSQL) and the confirm is
 * plain, inside the caller's write unit.
 * @returns what was done, or null when nothing was (not plain, or SQLite): then the caller
 *   takes its own path in the same unit
 */
export async function plainConfirm(
  trx: Transaction<DB>,
  projectId: string,
  reservationId: string,
  actualMicros: number,
  nowMs: number,
): Promise<PlainConfirmed | null> {
  if (engineOf(trx) !== "postgres") return null;
  const write = pgStatement(projectId, reservationId, actualMicros);
  return write.result((await trx.executeQuery(write.statement(trx, nowMs))).rows);
}
