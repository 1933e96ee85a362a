/**
 * A batch's plain debits on PostgreSQL in one round trip (docs/design.md#batches). A batch runs
 * its operations one after the other in one transaction; on PostgreSQL each plain debit
 * (a deduction, a manual debit) is one call of `ledger_plain_debit`, and a batch of 1,000 would
 * wait for 1,000 round trips. So a run of consecutive operations whose plain path is such a call
 * (and that carry no idempotencyKey, whose lookup and store are statements of their own) goes to
 * `ledger_plain_debits` (sql/postgres/0014_grouped_debits.sql), which answers as those calls made
 * in the same order would, and stops after the first one that is not plain (that one changed
 * nothing). Inside, it makes one plain move per account for the sum of that account's debits
 * (the plain conditions are monotone in the amount, so the sum is plain exactly when each debit
 * in order is) and inserts all their entries in one statement. The rule stays where it is, in
 * the plain move that `ledger_plain_debit` makes too; the answers become each route's body
 * through the route's own `done` (src/ledger/plain-debit.ts).
 */
import { sql, type Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import type { PlainDebitCall, PlainDebitRow } from "../db/write-path.ts";

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
  /** Whether the call after them was made and found not plain (it changed nothing). */
  stoppedAtNotPlain: boolean;
}

/**
 * Makes `calls` (one project's plain debits, in order) at `nowMs` in `trx` in one round trip.
 * @returns the results of the leading calls that were applied; the first call that was not
 *   plain, if any, changed nothing and comes right after them
 * @throws what the statement throws (the transaction is then aborted)
 */
export async function runPlainDebits(
  trx: Transaction<DB>,
  nowMs: number,
  projectId: string,
  calls: ((nowMs: number) => PlainDebitCall<unknown>)[],
): Promise<PlainDebitsDone> {
  const made = calls.map((call) => call(nowMs));
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
  for (const { args: a } of made) {
    if (a.projectId !== projectId) throw new Error("a batch's debits belong to its project");
    args.refs.push(a.ref);
    args.byIds.push(a.byId);
    args.amounts.push(a.amountMicros);
    args.txnIds.push(a.txnId);
    args.descriptions.push(a.description);
    args.metadata.push(a.metadata);
    args.sources.push(a.source);
  }
  const { rows } = await trx.executeQuery(plainDebits(trx, args));
  const bodies: unknown[] = [];
  for (const row of rows) {
    const call = made[Number(row.idx) - 1];
    const body = row.outcome === "applied" && call ? call.done(row) : null;
    if (body === null) return { bodies, stoppedAtNotPlain: true };
    bodies.push(body);
  }
  return { bodies, stoppedAtNotPlain: false };
}
