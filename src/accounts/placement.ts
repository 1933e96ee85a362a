/**
 * Where an account sits in its tree and who funds it (docs/api.md#pools-and-members): the
 * parent and funding of a new account, a move under another parent (`parentId` by update), a
 * switch of funding, and each account's pool for the Account object's `fundedBy`.
 *
 * The rules: at most 4 levels (a root and 3 below), also after a move with the whole subtree;
 * a parent is never the account itself or below it; a root funds itself; an account funded by
 * its parent holds no credits and has no low-balance threshold; an account moves only while
 * nothing below it (itself included) holds credits, and switches to `parent` only with a zero
 * balance, nothing held below it and no active plan assignment. `tree_links` (1 for a parent,
 * plus 1 per child) is kept in the same unit, on the account and on both parents.
 */
import type { Transaction } from "kysely";
import type { AccountRow, DB, Funding } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { findAccount, type Reader } from "./lookup.ts";
import { pathUp } from "./spending.ts";
import { heldTree, MAX_LEVELS } from "./tree.ts";

/** What a create or an update asks of an account's place (left out: unchanged). */
export interface PlacementInput {
  /** The parent (internal id or externalId); null: a root. */
  parentId?: string | null | undefined;
  funding?: Funding | undefined;
  /** Micro-credits; null removes it. */
  lowBalanceThreshold?: number | null | undefined;
}

/** The columns a placement sets. */
export type Placement = Pick<AccountRow, "parent_id" | "funding" | "tree_links">;

/** @throws ApiError VALIDATION_ERROR on `body.<field>` */
function invalid(field: string, message: string): ApiError {
  return new ApiError("VALIDATION_ERROR", `Invalid body.${field}: ${message}`, [
    { path: `body.${field}`, message },
  ]);
}

/** 409 FUNDED_BY_PARENT for `what` on an account funded by its parent. */
export function fundedByParent(
  account: Pick<AccountRow, "id" | "external_id">,
  what: string,
): ApiError {
  return new ApiError(
    "FUNDED_BY_PARENT",
    `Account ${account.external_id} is funded by its parent: ${what}`,
    { accountId: account.id, externalId: account.external_id },
  );
}

/**
 * The place of a new account: under `input.parentId` (found, and locked, in the project) with
 * its funding (default `parent` under a parent, `own` for a root); the parent gains a link.
 * @throws ApiError ACCOUNT_NOT_FOUND (the parent), VALIDATION_ERROR (a fifth level, a root
 *   funded by its parent), FUNDED_BY_PARENT (a threshold on an account funded by its parent)
 */
export async function placeNew(
  trx: Transaction<DB>,
  projectId: string,
  input: PlacementInput,
): Promise<Placement> {
  if (input.parentId === undefined || input.parentId === null) {
    if (input.funding === "parent") throw invalid("funding", "a root funds itself");
    return { parent_id: null, funding: "own", tree_links: 0 };
  }
  const parent = await findAccount(trx, projectId, input.parentId);
  const above = await pathUp(trx, parent);
  if (above.length + 1 > MAX_LEVELS) {
    throw invalid("parentId", `a tree has at most ${MAX_LEVELS} levels`);
  }
  const funding = input.funding ?? "parent";
  if (funding === "parent" && input.lowBalanceThreshold != null) {
    throw new ApiError(
      "FUNDED_BY_PARENT",
      "An account funded by its parent has no low-balance threshold",
      { parentId: parent.id },
    );
  }
  await addLinks(trx, parent.id, 1);
  return { parent_id: parent.id, funding, tree_links: 1 };
}

/**
 * Applies an update's placement to `account` (found and locked by the caller) at `nowMs`: a move
 * to another parent (or to none), a switch of funding, and the threshold rule.
 * @returns the columns changed (empty when none)
 * @throws ApiError ACCOUNT_NOT_FOUND (the new parent), VALIDATION_ERROR (a cycle, a fifth
 *   level, a root funded by its parent), ACCOUNT_BUSY (`details.reason`), FUNDED_BY_PARENT
 */
export async function placeExisting(
  trx: Transaction<DB>,
  account: AccountRow,
  input: PlacementInput,
  nowMs: number,
): Promise<Partial<AccountRow>> {
  const changes: Partial<AccountRow> = {};
  let parentId = account.parent_id;
  let newParent: AccountRow | null | undefined;
  if (input.parentId !== undefined) {
    newParent =
      input.parentId === null ? null : await findAccount(trx, account.project_id, input.parentId);
    parentId = newParent?.id ?? null;
  }
  const funding = input.funding ?? account.funding;
  if (funding === "parent" && parentId === null) {
    throw invalid("funding", "a root funds itself: name funding own with parentId null");
  }
  const moving = parentId !== account.parent_id;
  const switching = funding !== account.funding;
  if (moving || switching) {
    const below = await heldTree(trx, account.id, nowMs);
    if (moving && newParent) {
      const above = await pathUp(trx, newParent);
      if (above.some((a) => a.id === account.id)) {
        throw invalid("parentId", "must not be the account itself or an account below it");
      }
      if (above.length + heightOf(below.nodes, account.id) > MAX_LEVELS) {
        throw invalid("parentId", `a tree has at most ${MAX_LEVELS} levels`);
      }
    }
    if (below.nodes.some((n) => n.heldMicros > 0)) throw busy("reservation", account);
    if (switching && funding === "parent") {
      if (account.balance_micros !== 0) throw busy("balance", account);
      if (await hasActivePlan(trx, account.id)) throw busy("plan", account);
      if (account.auto_topup_threshold_micros !== null) throw busy("auto_topup", account);
      changes.low_balance_threshold_micros = null;
    }
  }
  if (funding === "parent" && input.lowBalanceThreshold != null) {
    throw fundedByParent(account, "it has no low-balance threshold");
  }
  if (moving) {
    if (account.parent_id !== null) await addLinks(trx, account.parent_id, -1);
    if (parentId !== null) await addLinks(trx, parentId, 1);
    changes.parent_id = parentId;
    changes.tree_links =
      account.tree_links - (account.parent_id === null ? 0 : 1) + (parentId === null ? 0 : 1);
  }
  if (switching) changes.funding = funding;
  return changes;
}

/** 409 ACCOUNT_BUSY with `details.reason`. */
function busy(
  reason: "reservation" | "balance" | "plan" | "auto_topup",
  account: AccountRow,
): ApiError {
  const why = {
    reservation: "it or an account below it has a pending reservation",
    balance: "its balance is not zero",
    plan: "it has an active plan assignment",
    auto_topup: "it has an enabled automatic top-up",
  }[reason];
  return new ApiError("ACCOUNT_BUSY", `Account ${account.external_id} is busy: ${why}`, {
    reason,
    accountId: account.id,
    externalId: account.external_id,
  });
}

/** The levels of the subtree of `rootId` (1: the account alone), from its nodes. */
function heightOf(nodes: readonly { id: string; parent_id: string | null }[], rootId: string) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  let height = 1;
  for (const node of nodes) {
    let levels = 1;
    for (let at = node; at.id !== rootId && levels <= MAX_LEVELS; levels++) {
      const parent = byId.get(at.parent_id ?? "");
      if (parent === undefined) break;
      at = parent;
    }
    height = Math.max(height, levels);
  }
  return height;
}

async function hasActivePlan(trx: Transaction<DB>, accountId: string): Promise<boolean> {
  const row = await trx
    .selectFrom("account_plans")
    .select("id")
    .where("account_id", "=", accountId)
    .where("active", "=", 1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Adds `delta` to an account's `tree_links` (its row is locked by the caller's unit). */
async function addLinks(trx: Transaction<DB>, accountId: string, delta: number): Promise<void> {
  await trx
    .updateTable("accounts")
    .set((eb) => ({ tree_links: eb("tree_links", "+", delta) }))
    .where("id", "=", accountId)
    .execute();
}

/**
 * The pool of each of `rows` (its own id when it funds itself): the Account object's
 * `fundedBy`. One query per level above the deepest member, whatever the number of rows.
 */
export async function poolIds(
  db: Reader,
  rows: readonly Pick<AccountRow, "id" | "parent_id" | "funding">[],
): Promise<Map<string, string>> {
  const pools = new Map<string, string>();
  // Each member's current account on its way up, until one funds itself.
  let climbing = new Map<string, Pick<AccountRow, "id" | "parent_id" | "funding">>();
  for (const row of rows) {
    if (row.funding === "own") pools.set(row.id, row.id);
    else climbing.set(row.id, row);
  }
  for (let level = 1; climbing.size > 0; level++) {
    if (level > MAX_LEVELS) throw new Error("ledger invariant: a member with no pool");
    const parentIds = [...new Set([...climbing.values()].map((a) => a.parent_id ?? ""))];
    const parents = await db
      .selectFrom("accounts")
      .select(["id", "parent_id", "funding"])
      .where("id", "in", parentIds)
      .execute();
    const byId = new Map(parents.map((p) => [p.id, p]));
    const next = new Map<string, Pick<AccountRow, "id" | "parent_id" | "funding">>();
    for (const [memberId, at] of climbing) {
      const parent = byId.get(at.parent_id ?? "");
      if (parent === undefined) throw new Error(`ledger invariant: ${memberId} has no pool`);
      if (parent.funding === "own") pools.set(memberId, parent.id);
      else next.set(memberId, parent);
    }
    climbing = next;
  }
  return pools;
}

/** The pool of one account (`poolIds` of one row). */
export async function poolIdOf(
  db: Reader,
  row: Pick<AccountRow, "id" | "parent_id" | "funding">,
): Promise<string> {
  if (row.funding === "own") return row.id;
  const pools = await poolIds(db, [row]);
  return pools.get(row.id) ?? row.id;
}
