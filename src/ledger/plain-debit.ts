/**
 * The plain debit (docs/design.md#plain-writes): the common debit in as few statements as each
 * engine allows. A debit (debit.ts) is plain when the account exists, `available` covers what
 * the debit takes beyond the hold it settles, no grant expiry is due or held, the debit keeps
 * the low-balance event out of it (accounts/plain.ts), and the first grant in spending order
 * covers it. For such a debit the general path would only move the balance, append the entry,
 * draw that one grant down and (a confirm) settle the hold; the plain debit does exactly that,
 * deciding in the database, with the entry and the settlement the general path uses (debit.ts):
 *
 * - SQLite: `postEntry` with its plain move (core.ts, one conditional `UPDATE … RETURNING` whose
 *   WHERE holds every condition, then the entry's INSERT and the grant's UPDATE), then
 *   `settleHold`. The queue's one writer needs no row lock, and nothing runs between them.
 * - PostgreSQL: one call of `ledger_plain_debit` (sql/postgres/functions/ledger_plain_debit.sql,
 *   with the functions it calls beside it), which locks the account, then reads and
 *   writes as above, in one round trip; for an account known to have spend limits,
 *   `ledger_plain_limited_debit` (src/limits/plain.ts). The entry's description and metadata
 *   are the service's text, passed as parameters. A confirm's is
 *   `ledger_plain_confirm` (reservations/plain-confirm.ts), which locks the hold and then makes
 *   that call with the text stored with the hold.
 *
 * When the debit is not plain nothing is changed, and the write path runs the general path
 * (`WriteQueue.runWrite`). debit-equivalence.test.ts runs one table of cases through both.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import type { PlainDebitCall, PlainDebitRow, PlainWrite } from "../db/write-path.ts";
import { INTERNAL_ACCOUNT_ID, newId } from "../ids.ts";
import { knownLimits, limitArgs, pgPlainLimitedDebit, sqliteLimited } from "../limits/plain.ts";
import { entryMetadata, entryRow, type MoveGuard, type PostedEntry, postEntry } from "./core.ts";
import { type Debit, debitEntry, neededMicros, settleHold, type UnheldDebit } from "./debit.ts";

/** A plain debit done: the account and the stored entry. */
export interface PlainDebited {
  account: { id: string; external_id: string };
  row: PostedEntry;
}

/**
 * The debit `debit` (a deduction or a manual debit: no hold) on its plain path, one form per
 * engine. A confirm's is `plainConfirm` (reservations/plain-confirm.ts).
 */
export function plainDebit(debit: UnheldDebit): PlainWrite<PlainDebited> {
  return {
    sqlite: (trx, nowMs) => sqlitePlainDebit(trx, debit, nowMs),
    postgres: (db, nowMs) => pgDebit(db, debit, nowMs),
    debitCall: (nowMs) => pgDebitCall(debit, nowMs),
  };
}

/**
 * SQLite's plain debit `debit` (a confirm's too), inside the unit `trx`: what it did, or null
 * (nothing changed) when the debit is not plain, or when `guard`'s condition (core.ts
 * `MoveGuard`), checked by the balance move, does not hold.
 */
export async function sqlitePlainDebit(
  trx: Transaction<DB>,
  debit: Debit,
  nowMs: number,
  guard?: MoveGuard,
): Promise<PlainDebited | null> {
  // An unheld debit on an account known to have spend limits: the limited move
  // (src/limits/plain.ts), which also adds the debit to the counters of its windows.
  const text =
    debit.hold === undefined ? knownLimits(debit.projectId, debit.accountRef) : undefined;
  const limited = text === undefined ? undefined : sqliteLimited(text, nowMs);
  const plain = {
    byExternalId: !INTERNAL_ACCOUNT_ID.test(debit.accountRef),
    neededMicros: neededMicros(debit),
    limited,
    guard,
  };
  const posted = await postEntry(trx, debitEntry(debit, debit.accountRef, nowMs), plain);
  if (posted === null) return null;
  await settleHold(trx, debit, posted.id, nowMs);
  const { externalId, ...row } = posted;
  return { account: { id: row.account_id, external_id: externalId }, row };
}

/** What PostgreSQL's plain debit function answers (ledger_plain_debit, ledger_plain_confirm). */
export type PgDebitRow = PlainDebitRow;

export type PgArgs = {
  projectId: string;
  ref: string;
  byId: boolean;
  amountMicros: number;
  nowMs: number;
  txnId: string;
  description: string;
  metadata: string;
  source: string;
  holdId: string | null;
  holdMicros: number | null;
};

/**
 * PostgreSQL's plain debit without a hold (sql/postgres/functions/ledger_plain_debit.sql); the bench's
 * pgbench script runs this very statement (scripts/lib/pgbench.ts).
 */
export const pgPlainDebit = prepared<PgArgs, PgDebitRow>((db, arg) => ({
  compile: () =>
    sql<PgDebitRow>`SELECT * FROM ledger_plain_debit(${arg("projectId")}, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("description")}, ${arg("metadata")}, ${arg("source")}, ${arg("holdId")}, ${arg("holdMicros")})`.compile(
      db,
    ),
}));

/**
 * The arguments of `ledger_plain_debit` for the debit `debit` (no hold) at `nowMs`, whose entry
 * gets the id `txnId`: the entry's text as `debitEntry` makes it.
 */
export function pgDebitArgs(debit: UnheldDebit, nowMs: number, txnId: string): PgArgs {
  const entry = debitEntry(debit, debit.accountRef, nowMs);
  return {
    projectId: debit.projectId,
    ref: debit.accountRef,
    byId: INTERNAL_ACCOUNT_ID.test(debit.accountRef),
    amountMicros: debit.amountMicros,
    nowMs,
    txnId,
    description: debit.description,
    metadata: entryMetadata(entry),
    source: debit.source,
    holdId: null,
    holdMicros: null,
  };
}

/**
 * The plain debit `debit` on PostgreSQL as one call of `ledger_plain_debit` at `nowMs` (a batch
 * groups such calls: src/batch/plain-debits.ts): its arguments (a new transaction id) and what an
 * answer row means (null: not plain).
 */
function pgDebitCall(debit: UnheldDebit, nowMs: number): PlainDebitCall<PlainDebited> {
  const txnId = newId("txn");
  const args = pgDebitArgs(debit, nowMs, txnId);
  const done = (row: PlainDebitRow) =>
    row.outcome === "applied" ? pgDebited(debit, txnId, nowMs, row) : null;
  return { args, done };
}

/** The plain debit on PostgreSQL: one statement (committed by itself outside a transaction). */
async function pgDebit(db: Kysely<DB>, debit: UnheldDebit, nowMs: number) {
  const txnId = newId("txn");
  const args = pgDebitArgs(debit, nowMs, txnId);
  // An account known to have spend limits: the limited plain debit (src/limits/plain.ts).
  const limits = knownLimits(debit.projectId, debit.accountRef);
  const statement =
    limits === undefined
      ? pgPlainDebit(db, args)
      : pgPlainLimitedDebit(db, { ...args, ...limitArgs(limits, nowMs) });
  const done = (await db.executeQuery(statement)).rows[0];
  return done?.outcome === "applied" ? pgDebited(debit, txnId, nowMs, done) : null;
}

/**
 * What PostgreSQL's plain debit `debit` did, from the row its function answered (`applied`):
 * the account and the stored entry of id `txnId`, as `postEntry` answers it.
 */
export function pgDebited(
  debit: Debit,
  txnId: string,
  nowMs: number,
  done: PgDebitRow,
): PlainDebited {
  const stored = {
    balanceAfterMicros: Number(done.balance_after_micros),
    createdAtMs: Number(done.created_at_ms),
  };
  const entry = debitEntry(debit, done.account_id, nowMs);
  const row = entryRow(entry, txnId, stored);
  return {
    account: { id: done.account_id, external_id: done.external_id },
    row: { ...row, seq: Number(done.seq), grantId: null },
  };
}
