/**
 * Accounts inside accounts (docs/api.md#pools-and-members, docs/design.md#pools-and-members): an
 * account's path up to its root, its pool (the nearest account on that path that funds itself),
 * and what the holds below an account keep, for the credits a pool backs and for the limits of
 * each level.
 *
 * A tree has at most 4 levels, so a path is at most 4 rows. The writes lock a spender's path
 * (spending.ts); the reads here see what the caller's unit sees.
 */
import { type Expression, type Kysely, sql, type Transaction } from "kysely";
import type { Engine } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { AccountRow, DB } from "../db/schema.ts";

/** A connection, instance or transaction to read with. */
type Reader = Kysely<DB> | Transaction<DB>;

/** The most levels a tree has: a root and 3 below it. */
export const MAX_LEVELS = 4;

/** An account with what the tree code reads of it. */
export type TreeNode = Pick<AccountRow, "id" | "parent_id" | "funding">;

/** The pool of the account that starts `path`: the first account on it that funds itself. */
export function poolOf<A extends Pick<AccountRow, "funding">>(path: readonly A[]): A {
  const pool = path.find((a) => a.funding === "own");
  if (pool === undefined)
    throw new Error("ledger invariant: a path with no account funding itself");
  return pool;
}

/** The nodes of the tree below `rootId` (the root included), each with what its holds keep. */
export interface HeldTree {
  nodes: readonly (TreeNode & { heldMicros: number })[];
}

/**
 * Every account below `rootId` (and the root), with the micro-credits its own pending holds
 * unexpired at `nowMs` keep: one recursive query. On PostgreSQL call it after the root's lock
 * (through `pathUp`), so that it sees every hold committed before.
 */
export async function heldTree(db: Reader, rootId: string, nowMs: number): Promise<HeldTree> {
  const { rows } = await db.executeQuery(heldTreeQuery(db, { rootId, nowMs }));
  return {
    nodes: rows.map((r) => ({
      id: r.id,
      parent_id: r.parent_id,
      funding: r.funding,
      heldMicros: Number(r.held),
    })),
  };
}

/**
 * The recursive common table `tree(id, parent_id, funding)`: the account `root` (an expression
 * of its id) and every account below it, for a `WITH RECURSIVE` on `engine`. Each step finds
 * the children by the `parent_id` index. On PostgreSQL the step is a lateral subquery kept from
 * being merged (`OFFSET 0`): a prepared statement's generic plan would otherwise join the tree
 * to a scan of every account when the table is small.
 */
export function treeTable(root: Expression<string>, engine: Engine) {
  const children =
    engine === "postgres"
      ? sql`tree t CROSS JOIN LATERAL (SELECT a.id, a.parent_id, a.funding FROM accounts a WHERE a.parent_id = t.id OFFSET 0) a`
      : sql`accounts a JOIN tree t ON a.parent_id = t.id`;
  return sql`tree(id, parent_id, funding) AS (
      SELECT id, parent_id, funding FROM accounts WHERE id = ${root}
      UNION ALL
      SELECT a.id, a.parent_id, a.funding FROM ${children}
    )`;
}

/** What the pending holds of the `tree` row unexpired at `nowMs` keep (micro-credits). */
export function nodeHeld(nowMs: Expression<number>) {
  return sql<number>`(SELECT coalesce(sum(r.amount_micros), 0) FROM reservations r
        WHERE r.account_id = tree.id AND r.status = 'pending' AND r.expires_at_ms > ${nowMs})`;
}

/** `heldTree`'s query, prepared once per engine. */
const heldTreeQuery = prepared<
  { rootId: string; nowMs: number },
  TreeNode & { held: number | string }
>((db, arg, engine) => ({
  compile: () =>
    sql<
      TreeNode & { held: number | string }
    >`WITH RECURSIVE ${treeTable(sql.val(arg("rootId")), engine)}
    SELECT tree.id, tree.parent_id, tree.funding, ${nodeHeld(sql.val(arg("nowMs")))} AS held
    FROM tree`.compile(db),
}));

/** The nodes of `tree` by id. */
function nodesById(tree: HeldTree): Map<string, HeldTree["nodes"][number]> {
  return new Map(tree.nodes.map((n) => [n.id, n]));
}

/** Whether `id` is `levelId` or below it in the tree whose nodes are `byId`. */
function isAtOrBelow(byId: ReadonlyMap<string, TreeNode>, id: string, levelId: string): boolean {
  for (let at = byId.get(id); at !== undefined; at = byId.get(at.parent_id ?? "")) {
    if (at.id === levelId) return true;
    if (at.parent_id === null) return false;
  }
  return false;
}

/**
 * What the holds of `levelId` and of every account below it keep (micro-credits): the `held` of
 * each of that level's spend limits (docs/api.md#spend-limits, "at every level").
 */
export function subtreeHeld(tree: HeldTree, levelId: string): number {
  const byId = nodesById(tree);
  let held = 0;
  for (const node of tree.nodes) if (isAtOrBelow(byId, node.id, levelId)) held += node.heldMicros;
  return held;
}

/**
 * What the holds backed by `poolId`'s credits keep (micro-credits): its own and those of the
 * accounts below it whose pool it is (funded by their parent, up to it). The pool's `reserved`.
 */
export function fundedHeld(tree: HeldTree, poolId: string): number {
  const byId = nodesById(tree);
  let held = 0;
  for (const node of tree.nodes) {
    let at: TreeNode | undefined = node;
    while (at !== undefined && at.funding === "parent") at = byId.get(at.parent_id ?? "");
    if (at?.id === poolId) held += node.heldMicros;
  }
  return held;
}

/** The root of the tree `account` is in: its id, read without locks (a read's view). */
export async function rootIdOf(db: Reader, account: TreeNode): Promise<string> {
  let at = account;
  for (let level = 1; at.parent_id !== null; level++) {
    if (level > MAX_LEVELS) throw new Error(`ledger invariant: ${account.id} is too deep`);
    const parent = await db
      .selectFrom("accounts")
      .select(["id", "parent_id", "funding"])
      .where("id", "=", at.parent_id)
      .executeTakeFirstOrThrow();
    at = parent;
  }
  return at.id;
}
