/**
 * A run of plain debits on SQLite (docs/design.md#batches): a batch's consecutive deductions and
 * manual debits without an idempotencyKey, made with one balance move per account and one
 * INSERT of all their entries, instead of three statements per debit.
 *
 * It rests on one property of the plain conditions (docs/design.md#plain-writes): a sum of
 * debits on one account is plain only when each of them, applied in order, is plain. `available`
 * covering the sum covers every running prefix; the low-balance condition (no threshold, already
 * below it, or still at or above it after) holding for the sum holds after each prefix; the first
 * grant in spending order covering the sum covers each prefix and stays first. So when each
 * account's sum is plain (`plainRunMove`, plain-move.ts: the plain debit's own move statement with the
 * sum), the run is exactly its debits made one by one: each entry gets the running balance, in
 * the operations' order, and the first grant gives the sum. When an account's sum is not plain,
 * the moves are rolled back and the run is cut before that account's first debit, which the
 * caller runs on its general path.
 *
 * The calls are those a batch sends to PostgreSQL's `ledger_plain_debits` (plain-debit.ts
 * `pgDebitCall`): the same arguments and answer rows, so each operation's body comes from its
 * route's own `done`.
 */
import { sql, type Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import type { PlainDebitCall, PlainDebitRow } from "../db/write-path.ts";
import type { Moved } from "./core.ts";
import { plainRunMove } from "./plain-move.ts";

type CallArgs = PlainDebitCall<unknown>["args"];

/** What a run did: the answer rows of its leading calls, in order, all applied. */
export interface RunDone {
  rows: PlainDebitRow[];
  /** Whether the call after them is not plain: its account's sum was not (nothing of it changed). */
  stoppedAtNotPlain: boolean;
}

/**
 * The run's entries, one INSERT: `entries` is a JSON array of `[id, projectId, accountId,
 * amountMicros, balanceAfterMicros, description, metadata, source, createdAtMs, grantSeq]`
 * (grantSeq: the grant the debit drew from, null for 0), in the
 * operations' order; the i-th gets the `seq` `firstSeq` + i (the next ones of the ledger: the
 * queue's one writer inserts nothing between the two statements), so that `seq` follows the
 * operations' order and is known without reading the rows back. Integers in micro-credits and
 * epoch ms.
 */
const insertEntries = prepared<{ entries: string; firstSeq: number }, never>((db, arg) => ({
  compile: () =>
    sql<never>`INSERT INTO transactions (seq, id, project_id, account_id, type, amount_micros, balance_after_micros, description, metadata, source, reservation_id, account_plan_id, created_at_ms, reversal_of, grant_seq) SELECT ${arg("firstSeq")} + e.key, e.value ->> 0, e.value ->> 1, e.value ->> 2, 'debit', e.value ->> 3, e.value ->> 4, e.value ->> 5, e.value ->> 6, e.value ->> 7, NULL, NULL, e.value ->> 8, NULL, e.value ->> 9 FROM json_each(${arg("entries")}) e ORDER BY e.key`.compile(
      db,
    ),
}));

/** The ledger's last `seq` (null when it is empty). */
const lastSeq = prepared<Record<string, never>, { seq: number | null }>((db) =>
  db.selectFrom("transactions").select((eb) => eb.fn.max("seq").as("seq")),
);

/**
 * Makes the leading calls of `calls` (one project's plain debits, in order) at `nowMs` in the
 * unit `trx`, grouped per account (see the module comment). It takes the leading calls that name
 * their accounts the same way (all by internal id, or all by externalId), so that two references
 * never name one account; the caller sends the rest again.
 * @returns the answer rows of the calls made (at least the first, unless it is not plain)
 * @throws what a statement throws (the run's changes are rolled back first)
 */
export async function sqlitePlainRun(
  trx: Transaction<DB>,
  nowMs: number,
  calls: readonly CallArgs[],
): Promise<RunDone> {
  const byId = calls[0]?.byId;
  const sameWay = calls.findIndex((call) => call.byId !== byId);
  let upTo = sameWay < 0 ? calls.length : sameWay;
  let stoppedAtNotPlain = false;
  await sql.raw("SAVEPOINT plain_run").execute(trx);
  try {
    for (;;) {
      const head = calls.slice(0, upTo);
      const moved = await moveAccounts(trx, nowMs, head);
      if (moved.notPlainAt === undefined) {
        const rows = await insertRun(trx, head, moved.accounts);
        await sql.raw("RELEASE plain_run").execute(trx);
        return { rows, stoppedAtNotPlain };
      }
      await sql.raw("ROLLBACK TO plain_run").execute(trx);
      upTo = moved.notPlainAt;
      stoppedAtNotPlain = true;
      if (upTo === 0) {
        await sql.raw("RELEASE plain_run").execute(trx);
        return { rows: [], stoppedAtNotPlain: true };
      }
    }
  } catch (error) {
    await sql.raw("ROLLBACK TO plain_run").execute(trx);
    await sql.raw("RELEASE plain_run").execute(trx);
    throw error;
  }
}

/**
 * An account moved by a run: its new balance, the sum of the run's debits on it and the grant
 * they drew from.
 */
type MovedBy = Moved & { totalMicros: number; grantSeq: number | null };

/**
 * Moves each account of `calls` by the sum of its debits, in the order of their first debit.
 * When an account's sum is not plain, its debits are moved one at a time after the sums before
 * it, to find the first that is not plain.
 * @returns the accounts moved, by reference; or the index of the first debit found not plain
 *   (the moves made are not rolled back here, and those of the accounts after it not made)
 */
async function moveAccounts(
  trx: Transaction<DB>,
  nowMs: number,
  calls: readonly CallArgs[],
): Promise<{ accounts: Map<string, MovedBy>; notPlainAt?: number }> {
  /** Each account's reference → the indexes of its debits in `calls`. */
  const groups = new Map<string, number[]>();
  for (const [i, call] of calls.entries()) {
    const group = groups.get(call.ref);
    if (group === undefined) groups.set(call.ref, [i]);
    else group.push(i);
  }
  const accounts = new Map<string, MovedBy>();
  for (const [ref, group] of groups) {
    const moved = await moveBy(trx, nowMs, calls, group);
    if (moved === null)
      return { accounts, notPlainAt: await firstNotPlain(trx, nowMs, calls, group) };
    accounts.set(ref, moved);
  }
  return { accounts };
}

/** `plainRunMove` of the debits `indexes` of `calls` (one account's), by their sum. */
async function moveBy(
  trx: Transaction<DB>,
  nowMs: number,
  calls: readonly CallArgs[],
  indexes: readonly number[],
): Promise<MovedBy | null> {
  const first = calls[indexes[0] as number] as CallArgs;
  let totalMicros = 0;
  for (const i of indexes) totalMicros += (calls[i] as CallArgs).amountMicros;
  const run = {
    projectId: first.projectId,
    ref: first.ref,
    byExternalId: !first.byId,
    totalMicros,
  };
  const moved = await plainRunMove(trx, run, nowMs);
  return moved === null ? null : { ...moved, totalMicros };
}

/**
 * The index of the first of one account's debits `group` (indexes in `calls`) that is not
 * plain, its debits moved one by one; or, when each is plain but their sum is not (the first
 * grant runs out exactly between two of them, so no one grant covers the sum), the index of its
 * last, which the caller then runs alone.
 */
async function firstNotPlain(
  trx: Transaction<DB>,
  nowMs: number,
  calls: readonly CallArgs[],
  group: readonly number[],
): Promise<number> {
  for (const i of group) {
    if ((await moveBy(trx, nowMs, calls, [i])) === null) return i;
  }
  return group[group.length - 1] as number;
}

/**
 * Inserts the entries of `calls`, whose accounts `accounts` moved: each with the running balance
 * of its account in the calls' order.
 * @returns each call's answer row, in order
 */
async function insertRun(
  trx: Transaction<DB>,
  calls: readonly CallArgs[],
  accounts: ReadonlyMap<string, MovedBy>,
): Promise<PlainDebitRow[]> {
  /** Each account's balance before the debits still to be entered. */
  const running = new Map<string, number>();
  const rows: PlainDebitRow[] = [];
  const entries: unknown[][] = [];
  for (const call of calls) {
    const account = accounts.get(call.ref);
    if (account === undefined) throw new Error(`plain run: account ${call.ref} was not moved`);
    const before = running.get(call.ref) ?? account.balance_micros + account.totalMicros;
    const after = before - call.amountMicros;
    running.set(call.ref, after);
    const createdAtMs = account.updated_at_ms;
    entries.push([
      call.txnId,
      call.projectId,
      account.id,
      call.amountMicros,
      after,
      call.description,
      call.metadata,
      call.source,
      createdAtMs,
      call.amountMicros > 0 ? account.grantSeq : null,
    ]);
    rows.push({
      outcome: "applied",
      account_id: account.id,
      external_id: account.external_id,
      balance_after_micros: after,
      created_at_ms: createdAtMs,
      seq: 0,
    });
  }
  const last = (await trx.executeQuery(lastSeq(trx, {}))).rows[0]?.seq ?? 0;
  const firstSeq = Number(last) + 1;
  const insert = insertEntries(trx, { entries: JSON.stringify(entries), firstSeq });
  const inserted = await trx.executeQuery(insert);
  if (Number(inserted.numAffectedRows) !== rows.length) {
    throw new Error("plain run: the entries were not all inserted");
  }
  for (const [i, row] of rows.entries()) row.seq = firstSeq + i;
  return rows;
}
