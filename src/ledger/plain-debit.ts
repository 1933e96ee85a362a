/**
 * The plain debit (docs/design.md#plain-writes): the common debit in as few statements as each
 * engine allows. A deduction, a manual debit or a reservation's confirm is plain when the
 * account exists, `available` covers what the debit takes beyond the hold it settles, no grant
 * expiry is due or held, the debit keeps the low-balance event out of it (accounts/plain.ts),
 * and the first grant in spending order covers it. For such a debit the general path would only
 * move the balance, append the entry, draw that one grant down and (a confirm) settle the hold;
 * this module does exactly that, deciding in the database:
 *
 * - SQLite: one conditional `UPDATE … RETURNING` of the account whose WHERE holds every
 *   condition, then the entry's INSERT, the grant's UPDATE and the hold's (the queue's one
 *   writer needs no row lock, and nothing runs between them).
 * - PostgreSQL: one call of `ledger_plain_debit` (sql/postgres/0006_fast_debit.sql), which locks
 *   the account, then reads and writes as above, in one round trip.
 *
 * When the debit is not plain nothing is changed, and the caller takes the general path in the
 * same unit.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { plainAccount } from "../accounts/plain.ts";
import { engineOf } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, TransactionSource } from "../db/schema.ts";
import { oneStatement, type StatementWrite } from "../db/write-path.ts";
import { INTERNAL_ACCOUNT_ID, newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import { insertTransaction, type PostedEntry } from "./core.ts";
import { drawFromFirst, firstGrantRemaining } from "./grants.ts";

/** A debit to try plainly. */
export interface PlainDebit {
  projectId: string;
  /** The account: its internal id or externalId. */
  accountRef: string;
  /** What the debit takes, micro-credits (a confirm's actual amount; may be 0 then). */
  amountMicros: number;
  description: string;
  metadata: Record<string, unknown>;
  source: Extract<TransactionSource, "deduct" | "manual" | "reservation">;
  nowMs: number;
  /** A confirm: the pending hold it settles, which the unit holds (locked on PostgreSQL). */
  hold?: { id: string; amountMicros: number } | undefined;
}

/**
 * For a unit with a plain path: `plainTried` when the route's statement already tried the plain
 * write by itself and found it not plain (src/http/handlers.ts, `WriteInput.plainTried`); the
 * unit then takes its general path at once rather than ask the same question again.
 */
export interface PlainOption {
  plainTried: boolean;
}

/** A plain debit done: the account and the stored entry. */
export interface PlainDebited {
  account: { id: string; external_id: string };
  row: PostedEntry;
}

type Args = {
  projectId: string;
  ref: string;
  amountMicros: number;
  neededMicros: number;
  nowMs: number;
};

/**
 * SQLite's conditional move of the balance, by `column`: it updates the account only when the
 * debit is plain, and returns the new balance and time.
 */
function sqliteMove(column: "id" | "external_id") {
  return prepared<
    Args,
    { id: string; external_id: string; balance_micros: number; updated_at_ms: number }
  >((db, arg) =>
    db
      .updateTable("accounts")
      .set((eb) => ({
        balance_micros: eb("balance_micros", "-", arg("amountMicros")),
        updated_at_ms: arg("nowMs"),
      }))
      .where("project_id", "=", arg("projectId"))
      .where(column, "=", arg("ref"))
      .where((eb) =>
        eb.and([
          plainAccount(eb, arg("nowMs"), arg("neededMicros")),
          eb.or([
            eb(eb.val(arg("amountMicros")), "=", 0),
            eb(firstGrantRemaining(eb), ">=", arg("amountMicros")),
          ]),
        ]),
      )
      .returning(["id", "external_id", "balance_micros", "updated_at_ms"]),
  );
}

const sqliteById = sqliteMove("id");
const sqliteByExternalId = sqliteMove("external_id");

/** A confirm's settlement of its hold, in the plain debit's unit (SQLite). */
const settleHold = prepared<
  { id: string; nowMs: number; actualMicros: number; txnId: string },
  unknown
>((db, arg) =>
  db
    .updateTable("reservations")
    .set({
      status: "confirmed",
      settled_at_ms: arg("nowMs"),
      actual_micros: arg("actualMicros"),
      transaction_id: arg("txnId"),
    })
    .where("id", "=", arg("id"))
    .where("status", "=", "pending"),
);

type PgRow = {
  outcome: "applied" | "other";
  account_id: string;
  external_id: string;
  balance_after_micros: number;
  created_at_ms: number;
  seq: number;
};

type PgArgs = Args & {
  byId: boolean;
  txnId: string;
  description: string;
  metadata: string;
  source: string;
  holdId: string | null;
  holdMicros: number | null;
};

/**
 * PostgreSQL's one statement (sql/postgres/0006_fast_debit.sql); the bench's pgbench script runs
 * this very statement (scripts/lib/pgbench.ts).
 */
export const pgPlainDebit = prepared<PgArgs, PgRow>((db, arg) => ({
  compile: () =>
    sql<PgRow>`SELECT * FROM ledger_plain_debit(${arg("projectId")}, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("description")}, ${arg("metadata")}, ${arg("source")}, ${arg("holdId")}, ${arg("holdMicros")})`.compile(
      db,
    ),
}));

/**
 * The plain debit as PostgreSQL's one statement: its statement at `nowMs`, and what its row
 * means (a debit done, or null when it was not plain and nothing changed).
 */
function pgStatement(debit: Omit<PlainDebit, "nowMs">) {
  const txnId = newId("txn");
  const metadata = stringifyJson(debit.metadata);
  const args = {
    projectId: debit.projectId,
    ref: debit.accountRef,
    byId: INTERNAL_ACCOUNT_ID.test(debit.accountRef),
    amountMicros: debit.amountMicros,
    neededMicros: debit.amountMicros - (debit.hold?.amountMicros ?? 0),
    txnId,
    description: debit.description,
    metadata,
    source: debit.source,
    holdId: debit.hold?.id ?? null,
    holdMicros: debit.hold?.amountMicros ?? null,
  };
  return {
    statement: (db: Kysely<DB>, nowMs: number) => pgPlainDebit(db, { ...args, nowMs }),
    result: (rows: PgRow[]): PlainDebited | null => {
      const done = rows[0];
      if (done?.outcome !== "applied") return null;
      const stored = {
        balanceAfterMicros: Number(done.balance_after_micros),
        createdAtMs: Number(done.created_at_ms),
        seq: Number(done.seq),
      };
      return {
        account: { id: done.account_id, external_id: done.external_id },
        row: entry(debit, done.account_id, txnId, metadata, stored),
      };
    },
  };
}

/**
 * The plain debit as a write of its own, one statement outside any transaction
 * (`WriteQueue.runStatement`), for a request without an Idempotency-Key. Only PostgreSQL runs
 * it; SQLite's queue declines it, and the caller's unit tries `plainDebit`.
 */
export function plainDebitStatement(
  debit: Omit<PlainDebit, "nowMs" | "hold">,
): StatementWrite<PlainDebited> {
  const write = pgStatement(debit);
  return oneStatement(write.statement, write.result);
}

/**
 * Debits the account when the debit is plain (see the module comment), inside the caller's
 * write unit.
 * @returns the account and the stored entry, or null when the debit is not plain (then nothing
 *   was changed; on PostgreSQL the account's row lock may be held, as the general path takes it)
 * @throws Error (a broken ledger invariant) when a statement refuses what the conditions allowed
 */
export async function plainDebit(
  trx: Transaction<DB>,
  debit: PlainDebit,
): Promise<PlainDebited | null> {
  if (engineOf(trx) === "postgres") {
    const write = pgStatement(debit);
    return write.result((await trx.executeQuery(write.statement(trx, debit.nowMs))).rows);
  }
  const args = {
    projectId: debit.projectId,
    ref: debit.accountRef,
    amountMicros: debit.amountMicros,
    neededMicros: debit.amountMicros - (debit.hold?.amountMicros ?? 0),
    nowMs: debit.nowMs,
  };
  const byId = INTERNAL_ACCOUNT_ID.test(debit.accountRef);
  const metadata = stringifyJson(debit.metadata);
  const txnId = newId("txn");
  const move = byId ? sqliteById : sqliteByExternalId;
  const moved = (await trx.executeQuery(move(trx, args))).rows[0];
  if (!moved) return null;
  const stored = {
    balanceAfterMicros: moved.balance_micros,
    createdAtMs: moved.updated_at_ms,
    seq: 0,
  };
  const { seq: _, grantId: __, ...values } = entry(debit, moved.id, txnId, metadata, stored);
  const inserted = (await trx.executeQuery(insertTransaction(trx, values))).rows[0];
  if (inserted === undefined)
    throw new Error("ledger invariant: the entry's insert returned no seq");
  if (debit.amountMicros > 0) await drawFromFirst(trx, moved.id, debit.amountMicros);
  if (debit.hold) {
    const hold = { id: debit.hold.id, nowMs: debit.nowMs, actualMicros: debit.amountMicros, txnId };
    await trx.executeQuery(settleHold(trx, hold));
  }
  return {
    account: { id: moved.id, external_id: moved.external_id },
    row: { ...values, seq: Number(inserted.seq), grantId: null },
  };
}

/** The stored entry of a plain debit. */
function entry(
  debit: Omit<PlainDebit, "nowMs">,
  accountId: string,
  txnId: string,
  metadata: string,
  stored: { balanceAfterMicros: number; createdAtMs: number; seq: number },
): PostedEntry {
  return {
    seq: stored.seq,
    id: txnId,
    project_id: debit.projectId,
    account_id: accountId,
    type: "debit",
    amount_micros: debit.amountMicros,
    balance_after_micros: stored.balanceAfterMicros,
    description: debit.description,
    metadata,
    source: debit.source,
    reservation_id: debit.hold?.id ?? null,
    account_plan_id: null,
    created_at_ms: stored.createdAtMs,
    grantId: null,
  };
}
