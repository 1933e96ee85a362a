/**
 * `ledger verify`'s checks of accounts inside accounts (docs/api.md#pools-and-members): each
 * account's parent is an account of its project, at most 4 levels under a root and never its own
 * ancestor; a root funds itself; `tree_links` counts its parent and children; an account funded
 * by its parent has a zero balance and no grant with anything left; every `onBehalfOf` names an
 * account of the same project; every `spend_levels` row has its debit's amount and time and
 * names an account of its project. What a pool's credits back (`reserved`) is checked by the
 * caller with `reservedBacked`, which reads each tree's holds once.
 */
import type { Kysely } from "kysely";
import { fundedHeld, type HeldTree, heldTree, MAX_LEVELS, rootIdOf } from "../accounts/tree.ts";
import type { DB } from "../db/schema.ts";

/** The tree checks. @returns the problems found (empty when all hold) */
export async function treeProblems(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const accounts = await db
    .selectFrom("accounts")
    .select(["id", "project_id", "parent_id", "funding", "tree_links", "balance_micros"])
    .execute();
  const byId = new Map(accounts.map((a) => [a.id, a]));
  const children = new Map<string, number>();
  for (const a of accounts) {
    if (a.parent_id !== null) children.set(a.parent_id, (children.get(a.parent_id) ?? 0) + 1);
  }
  for (const a of accounts) {
    const parent = a.parent_id === null ? undefined : byId.get(a.parent_id);
    if (a.parent_id !== null && (parent === undefined || parent.project_id !== a.project_id)) {
      problems.push(`account ${a.id}: parent ${a.parent_id} is not an account of its project`);
    }
    if (a.parent_id === null && a.funding !== "own") {
      problems.push(`account ${a.id}: a root funded by its parent`);
    }
    const links = (a.parent_id === null ? 0 : 1) + (children.get(a.id) ?? 0);
    if (Number(a.tree_links) !== links) {
      problems.push(`account ${a.id}: tree_links ${a.tree_links}, but ${links} links`);
    }
    let levels = 1;
    for (let at = parent; at !== undefined && levels <= MAX_LEVELS; levels++) {
      at = at.parent_id === null ? undefined : byId.get(at.parent_id);
    }
    if (levels > MAX_LEVELS) {
      problems.push(`account ${a.id}: more than ${MAX_LEVELS} levels (or a cycle) above it`);
    }
    if (a.funding === "parent" && Number(a.balance_micros) !== 0) {
      problems.push(`account ${a.id}: funded by its parent with a balance`);
    }
  }
  const fundedGrants = await db
    .selectFrom("credit_grants as g")
    .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq")
    .innerJoin("accounts as a", "a.id", "g.account_id")
    .select(["g.id", "a.id as account"])
    .where("a.funding", "=", "parent")
    .where("r.remaining_micros", ">", 0)
    .execute();
  for (const g of fundedGrants) {
    problems.push(`account ${g.account}: funded by its parent, its grant ${g.id} has credits left`);
  }
  const onBehalf = await db
    .selectFrom("transactions as t")
    .leftJoin("accounts as m", "m.id", "t.on_behalf_of")
    .select(["t.id", "t.on_behalf_of", "m.project_id as memberProject", "t.project_id"])
    .where("t.on_behalf_of", "is not", null)
    .execute();
  for (const t of onBehalf) {
    if (t.memberProject !== t.project_id) {
      problems.push(`transaction ${t.id}: onBehalfOf ${t.on_behalf_of} is not of its project`);
    }
  }
  const levels = await db
    .selectFrom("spend_levels as l")
    .leftJoin("transactions as t", "t.id", "l.transaction_id")
    .leftJoin("accounts as a", "a.id", "l.account_id")
    .select([
      "l.transaction_id",
      "l.account_id",
      "l.amount_micros",
      "l.created_at_ms",
      "t.amount_micros as debitAmount",
      "t.created_at_ms as debitAt",
      "t.type",
      "t.project_id",
      "a.project_id as levelProject",
    ])
    .execute();
  for (const l of levels) {
    if (
      l.type !== "debit" ||
      Number(l.amount_micros) !== Number(l.debitAmount) ||
      Number(l.created_at_ms) !== Number(l.debitAt) ||
      l.levelProject !== l.project_id
    ) {
      problems.push(
        `spend level ${l.account_id} of ${l.transaction_id}: not that debit's amount and time in its project`,
      );
    }
  }
  return problems;
}

/**
 * What the holds backed by an account's credits keep at `nowMs` (micro-credits): its own, and for
 * an account in a tree those of the accounts below it that it funds.
 */
export async function reservedBacked(
  db: Kysely<DB>,
  account: { id: string; parent_id: string | null; funding: "own" | "parent"; tree_links: number },
  nowMs: number,
  ownHeld: () => Promise<number>,
  trees: Map<string, HeldTree>,
): Promise<number> {
  if (Number(account.tree_links) === 0) return ownHeld();
  const rootId = await rootIdOf(db, account);
  let tree = trees.get(rootId);
  if (tree === undefined) {
    tree = await heldTree(db, rootId, nowMs);
    trees.set(rootId, tree);
  }
  return fundedHeld(tree, account.id);
}
