/**
 * The plain debit of an account in a tree (docs/design.md#pools-and-members): a deduction or
 * manual debit named by a member (or by a pool with children), which its pool pays and every
 * level's limits judge. It is plain when the admission rule (src/admission/rule.ts) puts it in
 * its plain region: `plainDebit` on the pool (its `available` less every hold it backs, its
 * threshold, its first grant; no grant expiry due or held, no automatic top-up) and
 * `plainLimit` of each limit of each level of the path, with that level's subtree's holds as
 * its `held`. There the general path (service.ts `generalDebit`) would refuse nothing and raise
 * no event; the plain debit writes the rows it writes, and nothing when not plain:
 *
 * - SQLite (this module): one read of the path with the pool's first grant and grant work and
 *   the holds of the root's tree, the decision on numbers (`plainDebit`, enforce.ts
 *   `levelsPlain`), then the writes: one UPDATE of the path's rows (the pool's balance move,
 *   each level's spend slots as slots.ts `slotSets` adds to them), the entry and its draw
 *   (core.ts `appendEntry`) and `recordSpendLevels`. The queue's one writer runs nothing in
 *   between, so the read is still true when the writes are made.
 * - PostgreSQL (plain-member-pg.ts): one call of `ledger_plain_member_debit`
 *   (sql/postgres/functions/), which locks the path in the general path's order and decides
 *   with the rule's generated functions, for the caller's guess of each level's limits.
 *
 * test/member-equivalence.test.ts runs a table of tree cases through both paths.
 */
import { type Expression, expressionBuilder, sql, type Transaction } from "kysely";
import {
  recordSpendLevels,
  type Spending,
  spendLevels,
  treeSpending,
} from "../accounts/spending.ts";
import { type HeldTree, MAX_LEVELS, nodeHeld, treeTable } from "../accounts/tree.ts";
import { grantWork } from "../admission/grant-work.ts";
import { numbers, plainDebit } from "../admission/rule.ts";
import { moveTime } from "../db/move-time.ts";
import { type Prepared, prepared } from "../db/prepared.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import type { SlotColumn } from "../db/slot-columns.ts";
import { INTERNAL_ACCOUNT_ID } from "../ids.ts";
import { levelsPlain } from "../limits/enforce.ts";
import { limitPlan } from "../limits/plan.ts";
import { slotSets, slotSums } from "../limits/slots.ts";
import { appendEntry, type Moved, type PostedEntry } from "./core.ts";
import { debitEntry, type PlainDebited, type UnheldDebit } from "./debit.ts";
import { firstGrantRemaining } from "./grants.ts";

/** What a member debit's plain try found: done, not plain, or the account in no tree. */
export type MemberTry =
  | { kind: "applied"; done: PlainDebited }
  | { kind: "other" }
  | { kind: "untreed"; stored: string | null | undefined };

/** A level of the spender's path as SQLite's read finds it. */
type PathRow = AccountRow & {
  grant_work: number | null;
  first_remaining: number | null;
  /** The spender's row only: the root's tree as a JSON array of [id, parentId, funding, held]. */
  tree: string | null;
};

type PathKey = { projectId: string; ref: string; nowMs: number };

/**
 * The path from the account named by `column` up to its root (`[spender, …, root]`, at most
 * one level past MAX_LEVELS), each row funding itself with its grant work (grant-work.ts) and
 * the remaining of its first grant in spending order (null in the others), the spender's with the holds of the root's tree (tree.ts
 * `heldTree`, in the same statement).
 */
const readPath = (column: "id" | "external_id") =>
  prepared<PathKey, PathRow>((db, arg) => {
    const eb = expressionBuilder<DB, "accounts">();
    const nowMs = sql.val(arg("nowMs"));
    const root = sql<string>`(SELECT up.id FROM up ORDER BY up.lvl DESC LIMIT 1)`;
    return {
      compile: () =>
        sql<PathRow>`WITH RECURSIVE up(lvl, id) AS (SELECT 0, s.id FROM accounts s WHERE s.project_id = ${arg("projectId")} AND s.${sql.raw(column)} = ${arg("ref")} UNION ALL SELECT up.lvl + 1, p.parent_id FROM up JOIN accounts p ON p.id = up.id WHERE p.parent_id IS NOT NULL AND up.lvl < ${sql.lit(MAX_LEVELS)}), ${treeTable(root, "sqlite")} SELECT accounts.*, CASE WHEN accounts.funding = 'own' THEN ${grantWork(eb, arg("nowMs"))} END AS grant_work, CASE WHEN accounts.funding = 'own' THEN (${firstGrantRemaining(eb)}) END AS first_remaining, CASE WHEN up.lvl = 0 THEN (SELECT json_group_array(json_array(tree.id, tree.parent_id, tree.funding, ${nodeHeld(nowMs)})) FROM tree) END AS tree FROM up JOIN accounts ON accounts.id = up.id ORDER BY up.lvl`.compile(
          db,
        ),
    };
  });

const readPathBy = { id: readPath("id"), external_id: readPath("external_id") };

/** The tree of the path read's `tree` column. */
function treeOf(text: string | null): HeldTree {
  const nodes = JSON.parse(text ?? "[]") as [string, string | null, "own" | "parent", number][];
  return {
    nodes: nodes.map(([id, parent_id, funding, held]) => ({
      id,
      parent_id,
      funding,
      heldMicros: held,
    })),
  };
}

/**
 * SQLite's plain debit `debit` (no hold) of an account in a tree, inside the unit `trx` at
 * `nowMs` (see the module comment).
 * @returns `applied` with what it did; `other` (nothing changed) when not plain, or when no
 *   account is found; `untreed` (nothing changed) when the account is in no tree, with its
 *   stored limits text
 */
export async function sqliteMemberDebit(
  trx: Transaction<DB>,
  debit: UnheldDebit,
  nowMs: number,
): Promise<MemberTry> {
  const column = INTERNAL_ACCOUNT_ID.test(debit.accountRef) ? "id" : "external_id";
  const key = { projectId: debit.projectId, ref: debit.accountRef, nowMs };
  const path = (await trx.executeQuery(readPathBy[column](trx, key))).rows;
  const spender = path[0];
  if (spender === undefined) return { kind: "other" };
  if (spender.tree_links === 0) return { kind: "untreed", stored: spender.spend_limits };
  const root = path[path.length - 1] as PathRow;
  if (root.parent_id !== null || path.length > MAX_LEVELS) return { kind: "other" };
  const found = {
    account: spender,
    balance: spender.balance_micros,
    reserved: 0,
    available: spender.balance_micros,
    grantWork: true,
  };
  const spending = treeSpending(found, path, treeOf(spender.tree));
  const pool = spending.payer.account as PathRow;
  const amount = debit.amountMicros;
  const fits = plainDebit(numbers, {
    region: pool.auto_topup_threshold_micros === null && pool.grant_work === 0,
    available: spending.payer.available,
    needed: amount,
    drawn: amount,
    firstRemaining: pool.first_remaining,
    threshold: pool.low_balance_threshold_micros,
  });
  const levels = spendLevels(spending);
  const judged = levels.map((level, i) => ({ ...level, spent: slotSums(path[i] as PathRow) }));
  if (!fits || !levelsPlain(judged, nowMs, amount)) return { kind: "other" };
  const row = await writeMember(trx, debit, nowMs, spending);
  return { kind: "applied", done: { account: spender, row } };
}

/**
 * The writes of a plain member debit, as the general path makes them: the pool's balance move
 * and each level's spend slots (slots.ts `slotSets`) in one UPDATE of the path's rows
 * (`treeMove`), the entry and its draw (core.ts `appendEntry`) and the `spend_levels` rows. The
 * windows are those at `nowMs`, the move's time on SQLite.
 * @returns the stored entry
 */
async function writeMember(
  trx: Transaction<DB>,
  debit: UnheldDebit,
  nowMs: number,
  spending: Spending,
): Promise<PostedEntry> {
  const pool = spending.payer.account;
  const amount = debit.amountMicros;
  const args: TreeMoveArgs = { amountMicros: amount, nowMs };
  const shape: number[] = [];
  let poolAt = -1;
  for (const level of spending.path) {
    const text = level.spend_limits;
    const windows = text === null || amount <= 0 ? [] : limitPlan(text, nowMs).windows;
    if (level.id !== pool.id && windows.length === 0) continue;
    const k = shape.length;
    if (level.id === pool.id) poolAt = k;
    args[`level${k}`] = level.id;
    windows.forEach((w, i) => {
      args[`level${k}Slot${i}`] = w.startMs;
    });
    shape.push(windows.length);
  }
  const moved = (await trx.executeQuery(treeMove(shape, poolAt)(trx, args))).rows;
  const poolMoved = moved.find((row) => row.id === pool.id);
  if (poolMoved === undefined || moved.length !== shape.length) {
    throw new Error(`ledger invariant: pool ${pool.id} refused a plain debit`);
  }
  const entry = debitEntry(debit, pool.id, nowMs);
  const row = await appendEntry(trx, { ...entry, onBehalfOf: spending.onBehalfOf }, poolMoved);
  await recordSpendLevels(trx, spending, row);
  return row;
}

/**
 * The tree move's arguments: the debit, the time, each level's id (`level<k>`) and the window
 * start of each of its slots (`level<k>Slot<i>`).
 */
type TreeMoveArgs = { amountMicros: number; nowMs: number } & Record<`level${number}`, string> &
  Record<`level${number}Slot${number}`, number>;

/** The prepared tree moves, by shape (each level's slot count, and the pool's place). */
const treeMoves = new Map<string, Prepared<TreeMoveArgs, Moved>>();

/**
 * One UPDATE of the levels `level0` … of a plain member debit, level k adding the debit to its
 * slots 0 … shape[k]−1 (slots.ts `slotSets`), and the level `poolAt` (the pool) moving its
 * balance down by it (never below zero) and stamped at the move's time.
 */
function treeMove(shape: readonly number[], poolAt: number): Prepared<TreeMoveArgs, Moved> {
  const key = `${poolAt} ${shape.join(",")}`;
  let move = treeMoves.get(key);
  if (move === undefined) {
    move = prepared<TreeMoveArgs, Moved>((db, arg, engine) => {
      const id = sql.ref<string>("id");
      const ids = shape.map((_, k) => arg(`level${k}`));
      const pool = arg(`level${poolAt}`);
      const amount = arg("amountMicros");
      /** Each column's value per level, for the levels that set it. */
      const byColumn = new Map<SlotColumn, [unknown, Expression<number>][]>();
      shape.forEach((n, k) => {
        for (const [column, value] of slotSets(n, (i) => arg(`level${k}Slot${i}`), amount)) {
          byColumn.set(column, [...(byColumn.get(column) ?? []), [ids[k], value]]);
        }
      });
      let update = db.updateTable("accounts").set((eb) => ({
        balance_micros: sql<number>`CASE WHEN ${id} = ${pool} THEN balance_micros - ${amount} ELSE balance_micros END`,
        updated_at_ms: sql<number>`CASE WHEN ${id} = ${pool} THEN ${moveTime(eb, arg("nowMs"), engine)} ELSE updated_at_ms END`,
      }));
      for (const [column, values] of byColumn) {
        const whens = values.map(([level, value]) => sql`WHEN ${level} THEN ${value}`);
        update = update.set(
          column,
          sql<number>`CASE ${id} ${sql.join(whens, sql` `)} ELSE ${sql.ref(column)} END`,
        );
      }
      return update
        .where("id", "in", ids)
        .where((eb) => eb.or([eb("id", "!=", pool), eb("balance_micros", ">=", amount)]))
        .returning(["id", "external_id", "balance_micros", "updated_at_ms"]);
    });
    treeMoves.set(key, move);
  }
  return move;
}
