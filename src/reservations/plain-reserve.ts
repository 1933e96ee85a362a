/**
 * The plain reservation (docs/design.md#plain-writes): a hold in the plain region of the
 * admission rule (src/admission/rule.ts `plainDebit`, drawing nothing: its account exists, has no
 * spend limits and no grant expiry due or held, its `available` covers the hold, and the hold
 * keeps the low-balance event out of it). Its only write is the hold's row, which this module
 * inserts when the database finds the reservation plain:
 *
 * - SQLite: one `INSERT … SELECT … FROM accounts WHERE <conditions> RETURNING`.
 * - PostgreSQL: one call of `ledger_plain_reserve` (sql/postgres/functions/ledger_plain_reserve.sql), which
 *   locks the account, reads and inserts, in one round trip.
 *
 * When it is not plain nothing is changed, and the write path runs the general path
 * (`WriteQueue.runWrite`).
 */
import { sql } from "kysely";
import { accountTerms } from "../accounts/plain.ts";
import { inSql, plainDebit } from "../admission/rule.ts";
import { prepared } from "../db/prepared.ts";
import type { ReservationRow } from "../db/schema.ts";
import type { PlainWrite } from "../db/write-path.ts";
import { INTERNAL_ACCOUNT_ID } from "../ids.ts";

/**
 * The columns a new hold sets, in the order of the select below (`settled_at_ms`,
 * `actual_micros` and `transaction_id` are set when it ends).
 */
export const NEW_HOLD_COLUMNS = [
  "id",
  "project_id",
  "account_id",
  "amount_micros",
  "status",
  "metadata",
  "created_at_ms",
  "expires_at_ms",
  "confirm_description",
  "confirm_metadata",
] as const satisfies readonly (keyof ReservationRow)[];

/** A hold as the caller built it, but for the account, which the database resolves. */
export type PlainHold = Omit<ReservationRow, "account_id">;

type Args = {
  id: string;
  projectId: string;
  ref: string;
  amountMicros: number;
  metadata: string;
  nowMs: number;
  expiresAtMs: number;
  confirmDescription: string | null;
  confirmMetadata: string | null;
};

/** SQLite's conditional insert, naming the account by `column`. */
function sqliteReserve(column: "id" | "external_id") {
  return prepared<Args, { account_id: string }>((db, arg) =>
    db
      .insertInto("reservations")
      .columns([...NEW_HOLD_COLUMNS])
      .expression(
        db
          .selectFrom("accounts")
          .select((eb) => [
            eb.val(arg("id")).as("id"),
            "project_id",
            "id as account_id",
            eb.val(arg("amountMicros")).as("amount_micros"),
            sql.lit("pending").as("status"),
            eb.val(arg("metadata")).as("metadata"),
            eb.val(arg("nowMs")).as("created_at_ms"),
            eb.val(arg("expiresAtMs")).as("expires_at_ms"),
            eb.val(arg("confirmDescription")).as("confirm_description"),
            eb.val(arg("confirmMetadata")).as("confirm_metadata"),
          ])
          .where("project_id", "=", arg("projectId"))
          .where(column, "=", arg("ref"))
          .where((eb) =>
            // A hold lowers `available` by its amount and draws no grant yet.
            plainDebit(inSql, {
              ...accountTerms(arg("nowMs")),
              needed: eb.val(arg("amountMicros")),
              drawn: inSql.lit(0),
              firstRemaining: sql<null>`NULL`,
            }),
          ),
      )
      .returning("account_id"),
  );
}

const sqliteById = sqliteReserve("id");
const sqliteByExternalId = sqliteReserve("external_id");

type PgRow = { outcome: "applied" | "other"; account_id: string };

/** PostgreSQL's one statement (sql/postgres/functions/ledger_plain_reserve.sql). */
const pgReserve = prepared<Args & { byId: boolean }, PgRow>((db, arg) => ({
  compile: () =>
    sql<PgRow>`SELECT * FROM ledger_plain_reserve(${arg("projectId")}, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("id")}, ${arg("metadata")}, ${arg("expiresAtMs")}, ${arg("confirmDescription")}, ${arg("confirmMetadata")})`.compile(
      db,
    ),
}));

/** The arguments of the hold `hold` on the account `accountRef` (`byId`: PostgreSQL's). */
function pgArgs(accountRef: string, hold: PlainHold) {
  return {
    id: hold.id,
    projectId: hold.project_id,
    ref: accountRef,
    byId: INTERNAL_ACCOUNT_ID.test(accountRef),
    amountMicros: hold.amount_micros,
    metadata: hold.metadata,
    nowMs: hold.created_at_ms,
    expiresAtMs: hold.expires_at_ms,
    confirmDescription: hold.confirm_description,
    confirmMetadata: hold.confirm_metadata,
  };
}

/**
 * The reservation of the hold `holdAt(nowMs)` on the account `accountRef` (its internal id or
 * externalId) on its plain path, one form per engine: the stored hold, or null when the
 * reservation is not plain (nothing was changed).
 */
export function plainReserve(
  accountRef: string,
  holdAt: (nowMs: number) => PlainHold,
): PlainWrite<ReservationRow> {
  return {
    sqlite: async (trx, nowMs) => {
      const hold = holdAt(nowMs);
      const insert = INTERNAL_ACCOUNT_ID.test(accountRef) ? sqliteById : sqliteByExternalId;
      const { byId: _, ...args } = pgArgs(accountRef, hold);
      const done = (await trx.executeQuery(insert(trx, args))).rows[0];
      return done === undefined ? null : { ...hold, account_id: done.account_id };
    },
    postgres: async (db, nowMs) => {
      const hold = holdAt(nowMs);
      const done = (await db.executeQuery(pgReserve(db, pgArgs(accountRef, hold)))).rows[0];
      return done?.outcome === "applied" ? { ...hold, account_id: done.account_id } : null;
    },
  };
}
