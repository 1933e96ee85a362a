/**
 * The plain debit (docs/design.md#plain-writes): the common debit in as few statements as each
 * engine allows. A debit (debit.ts) is plain when it lies in the plain region of the admission
 * rule (src/admission/rule.ts `plainDebit`: the account exists, has no grant expiry due or held,
 * `available` covers what the debit takes beyond the hold it settles, the debit keeps the
 * low-balance event out of it, and the first grant in spending order covers it; for an account
 * with spend limits, each limit's `plainLimit`). For such a debit the general path would only
 * move the balance, append the entry, draw that one grant down and (a confirm) settle the hold;
 * the plain debit does exactly that, deciding in the database, with the entry and the
 * settlement the general path uses (debit.ts):
 *
 * - SQLite: `plainPost` (plain-move.ts: one conditional `UPDATE … RETURNING` whose WHERE is the
 *   rule, then the entry's INSERT and the grant's UPDATE as core.ts `appendEntry` makes them),
 *   then `settleHold`. The queue's one writer needs no row lock, and nothing runs between them.
 * - PostgreSQL: one call of `ledger_plain_debit` (sql/postgres/functions/ledger_plain_debit.sql,
 *   with the functions it calls beside it and the rule's generated ones), which locks the
 *   account, then reads and writes as above, in one round trip; for an account with spend
 *   limits, `ledger_plain_limited_debit` (src/limits/plain.ts). The entry's description and
 *   metadata are the service's text, passed as parameters. A confirm's is
 *   `ledger_plain_confirm` (reservations/plain-confirm.ts), which locks the hold and then makes
 *   that call with the text stored with the hold.
 *
 * An unheld debit of an account in a tree (a member, or a pool with children) has a plain form of
 * its own, in which its pool pays and every level's limits judge it: plain-member.ts (SQLite),
 * plain-member-pg.ts (PostgreSQL, `ledger_plain_member_debit`); a confirm or a usage charge of
 * such an account takes the general path.
 *
 * Which statement an unheld debit tries first is the write path's guess of the account's limits
 * (src/db/seen-limits.ts: none, a limits text, or the limits of each level of its path); the
 * statement reads the stored limits itself, and a wrong guess costs one more try, never the
 * general path. When the debit is not plain nothing is
 * changed, and the write path runs the general path (`WriteQueue.runWrite`).
 * debit-equivalence.test.ts runs one table of cases through both.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { IN_TREE, type LimitsGuess, type SeenLimits, sameGuess } from "../db/seen-limits.ts";
import type { PlainDebitCall, PlainDebitRow, PlainWrite } from "../db/write-path.ts";
import { INTERNAL_ACCOUNT_ID, newId } from "../ids.ts";
import { limitArgs, pgPlainLimitedDebit, sqliteLimited, storedLimits } from "../limits/plain.ts";
import { entryMetadata } from "./core.ts";
import {
  type Debit,
  debitEntry,
  neededMicros,
  type PlainDebited,
  pgDebited,
  settleHold,
  type UnheldDebit,
} from "./debit.ts";
import { sqliteMemberDebit } from "./plain-member.ts";
import { pgMemberDebit } from "./plain-member-pg.ts";
import { type GuardArgs, type Guarded, plainPost } from "./plain-move.ts";

export { type PlainDebited, pgDebited } from "./debit.ts";

/**
 * The debit `debit` (a deduction or a manual debit: no hold) on its plain path, one form per
 * engine. A confirm's is `plainConfirm` (reservations/plain-confirm.ts).
 */
export function plainDebit(debit: UnheldDebit): PlainWrite<PlainDebited> {
  return {
    sqlite: (trx, nowMs, seen) => sqlitePlainDebit(trx, debit, nowMs, seen),
    postgres: (db, nowMs, seen) => pgDebit(db, debit, nowMs, seen),
    debitCall: (nowMs) => pgDebitCall(debit, nowMs),
  };
}

/**
 * SQLite's plain debit `debit` (a confirm's too), inside the unit `trx`: what it did, or null
 * (nothing changed) when the debit is not plain, or when `guarded`'s condition (plain-move.ts
 * `MoveGuard`), checked by the balance move, does not hold. An unheld debit tries the plain way
 * `seen` last read for its account: the move for its limits, or for an account in a tree the
 * member debit (plain-member.ts); when that made nothing, it reads what is stored in the same
 * unit and, when that is other than what was tried, tries that. A confirm's account must have
 * no limits and be in no tree, and a guarded debit's be in no tree (theirs are the general path).
 */
export async function sqlitePlainDebit<G extends GuardArgs>(
  trx: Transaction<DB>,
  debit: Debit,
  nowMs: number,
  seen: SeenLimits,
  guarded?: Guarded<G>,
): Promise<PlainDebited | null> {
  const entry = debitEntry(debit, debit.accountRef, nowMs);
  const byExternalId = !INTERNAL_ACCOUNT_ID.test(debit.accountRef);
  const unheld = debit.hold === undefined;
  /** One try for `guess`: what it did (null: nothing), and the stored guess when it read it. */
  const attempt = async (
    guess: LimitsGuess | undefined,
  ): Promise<{ done: PlainDebited | null; stored?: LimitsGuess | null | undefined }> => {
    if (typeof guess === "object") {
      if (!unheld || guarded !== undefined) return { done: null, stored: guess };
      const member = await sqliteMemberDebit(trx, { ...debit, hold: undefined }, nowMs);
      if (member.kind === "applied") return { done: member.done };
      return { done: null, stored: member.kind === "untreed" ? member.stored : guess };
    }
    const posted = await plainPost(trx, entry, {
      byExternalId,
      neededMicros: neededMicros(debit),
      limited: guess === undefined ? undefined : sqliteLimited(guess, nowMs),
      guarded,
    });
    if (posted === null) return { done: null };
    await settleHold(trx, debit, posted.id, nowMs);
    const { externalId, ...row } = posted;
    return { done: { account: { id: row.account_id, external_id: externalId }, row } };
  };
  const tried = unheld ? seen.get(debit.projectId, debit.accountRef) : undefined;
  let result = await attempt(tried);
  if (result.done === null && unheld) {
    const stored =
      "stored" in result
        ? result.stored
        : await storedLimits(trx, debit.projectId, debit.accountRef, byExternalId);
    if (stored !== undefined && !sameGuess(stored, tried)) {
      seen.set(debit.projectId, [debit.accountRef], stored);
      result = await attempt(stored ?? undefined);
    }
  }
  return result.done;
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

/**
 * The plain debit on PostgreSQL: one statement (committed by itself outside a transaction), for
 * the guess `seen` last recorded for the account (none, its limits text, or its path's for an
 * account in a tree: plain-member.ts); when the function found something else stored (it answers
 * it), again for that, a few times at most.
 */
async function pgDebit(db: Kysely<DB>, debit: UnheldDebit, nowMs: number, seen: SeenLimits) {
  const txnId = newId("txn");
  const args = pgDebitArgs(debit, nowMs, txnId);
  const call = async (
    guess: LimitsGuess | undefined,
  ): Promise<{ done: PlainDebited } | { next: LimitsGuess | null | undefined }> => {
    if (typeof guess === "object") return pgMemberDebit(db, debit, args, guess);
    const statement =
      guess === undefined
        ? pgPlainDebit(db, args)
        : pgPlainLimitedDebit(db, { ...args, ...limitArgs(guess, nowMs) });
    const done = (await db.executeQuery(statement)).rows[0];
    if (done?.outcome === "applied") return { done: pgDebited(debit, txnId, nowMs, done) };
    return { next: done?.outcome === "tree" ? IN_TREE : done?.stored_limits };
  };
  let guess = seen.get(debit.projectId, debit.accountRef);
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const answer = await call(guess);
    if ("done" in answer) return answer.done;
    const { next } = answer;
    if (next === undefined || sameGuess(next, guess)) return null;
    seen.set(debit.projectId, [debit.accountRef], next);
    guess = next ?? undefined;
  }
  return null;
}

/**
 * The most calls of one plain debit on PostgreSQL: a guess, then what is stored; for an account
 * newly seen in a tree, the call for the guess before (none, or a limits text), the member call
 * that reads its path's limits (an empty path guess), and the call for them.
 */
const MAX_TRIES = 3;
