/**
 * A batch's plain debits in few statements (docs/design.md#batches). A batch runs its operations
 * one after the other in one unit; made one at a time, each plain debit (a deduction, a manual
 * debit) costs three statements on SQLite and a round trip on PostgreSQL. So a run of
 * consecutive operations whose plain path is one call of `ledger_plain_debit` (and that carry
 * no idempotencyKey, whose lookup and store are statements of their own) is made together:
 *
 * - SQLite: `sqlitePlainRun` (src/ledger/plain-run.ts): one balance move per account for the
 *   sum of its debits, one INSERT of all the entries;
 * - PostgreSQL: `ledger_plain_debits` (sql/postgres/functions/ledger_plain_debits.sql), in one round trip:
 *   it answers as those calls made one at a time in the same order would, with one plain move
 *   per account for the sum of its debits and one INSERT of all the entries.
 *
 * Both make the leading calls that are plain and stop before the first one that is not (which
 * changed nothing): the caller runs that one on its general path, then the rest. The rule stays
 * where it is (the plain debit's); the answers become each route's body through the route's own
 * `done` (src/ledger/plain-debit.ts).
 */
import { sql, type Transaction } from "kysely";
import { onEngine } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import type { PlainDebitCall, PlainDebitRow } from "../db/write-path.ts";
import { type RunDone, sqlitePlainRun } from "../ledger/plain-run.ts";

/** Most debits sent in one call (a batch holds at most 1,000 operations anyway). */
export const MAX_DEBITS_PER_CALL = 1000;

type DebitsArgs = {
  projectId: string;
  refs: string[];
  byIds: boolean[];
  amounts: number[];
  nowMs: number;
  txnIds: string[];
  descriptions: string[];
  metadata: string[];
  sources: string[];
};

type DebitsRow = PlainDebitRow & { idx: number };

const plainDebits = prepared<DebitsArgs, DebitsRow>((db, arg) => ({
  compile: () =>
    sql<DebitsRow>`SELECT * FROM ledger_plain_debits(${arg("projectId")}, ${arg("refs")}::text[], ${arg("byIds")}::boolean[], ${arg("amounts")}::bigint[], ${arg("nowMs")}, ${arg("txnIds")}::text[], ${arg("descriptions")}::text[], ${arg("metadata")}::text[], ${arg("sources")}::text[])`.compile(
      db,
    ),
}));

/** What `runPlainDebits` did. */
export interface PlainDebitsDone {
  /** The results of the calls that were applied, in order: the first `bodies.length` calls. */
  bodies: unknown[];
  /** Whether the call after them was found not plain (it changed nothing). */
  stoppedAtNotPlain: boolean;
}

type CallArgs = PlainDebitCall<unknown>["args"];

/** PostgreSQL: `ledger_plain_debits` of `calls`, in one round trip. */
async function pgPlainRun(
  trx: Transaction<DB>,
  nowMs: number,
  projectId: string,
  calls: readonly CallArgs[],
): Promise<RunDone> {
  const args: DebitsArgs = {
    projectId,
    refs: [],
    byIds: [],
    amounts: [],
    nowMs,
    txnIds: [],
    descriptions: [],
    metadata: [],
    sources: [],
  };
  for (const a of calls) {
    args.refs.push(a.ref);
    args.byIds.push(a.byId);
    args.amounts.push(a.amountMicros);
    args.txnIds.push(a.txnId);
    args.descriptions.push(a.description);
    args.metadata.push(a.metadata);
    args.sources.push(a.source);
  }
  const { rows } = await trx.executeQuery(plainDebits(trx, args));
  const applied = rows.filter((row) => row.outcome === "applied");
  return { rows: applied, stoppedAtNotPlain: applied.length < rows.length };
}

/**
 * Makes the leading plain calls of `calls` (one project's plain debits, in order) at `nowMs` in
 * `trx`, together (see the module comment).
 * @returns the results of the leading calls that were applied (at least one, unless the first
 *   is not plain); the first call that was not plain, if any, changed nothing and comes right
 *   after them
 * @throws what a statement throws (on PostgreSQL the transaction is then aborted)
 */
export async function runPlainDebits(
  trx: Transaction<DB>,
  nowMs: number,
  projectId: string,
  calls: ((nowMs: number) => PlainDebitCall<unknown>)[],
): Promise<PlainDebitsDone> {
  const made = calls.map((call) => call(nowMs));
  const args = made.map((call) => call.args);
  if (args.some((a) => a.projectId !== projectId)) {
    throw new Error("a batch's debits belong to its project");
  }
  const done = await onEngine(trx, {
    sqlite: () => sqlitePlainRun(trx, nowMs, args),
    postgres: () => pgPlainRun(trx, nowMs, projectId, args),
  });
  const bodies: unknown[] = [];
  for (const [i, row] of done.rows.entries()) {
    const body = made[i]?.done(row) ?? null;
    if (body === null) return { bodies, stoppedAtNotPlain: true };
    bodies.push(body);
  }
  return { bodies, stoppedAtNotPlain: done.stoppedAtNotPlain };
}
