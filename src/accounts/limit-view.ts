/**
 * The spend limit reads (docs/api.md#spend-limits): each limit's current window with `spent`,
 * `held` and `remaining`, at the account and at every account above it (`ancestors`,
 * docs/api.md#pools-and-members), the account's `spendable`, and the check of a deduction. Reads change
 * nothing and hold nothing; they apply the same rule as the writes (judge.ts).
 */
import type { Kysely } from "kysely";
import { iso } from "../dates.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import { readSpent } from "../limits/counters.ts";
import { type LimitState, limitStates, refusingLimit, remainingMicros } from "../limits/judge.ts";
import { parseLimits } from "../limits/limits.ts";
import type { checkResponse, limitsResponse, limitWindowSchema } from "../limits/schemas.ts";
import { isEndless } from "../limits/windows.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";
import { readBalance } from "./lookup.ts";
import { type AccountQuery, resolveAccount } from "./service.ts";
import { pathUp } from "./spending.ts";
import { fundedHeld, heldTree, poolOf, subtreeHeld } from "./tree.ts";

/** One level's limits at `nowMs`: the account and its limits' states. */
interface LevelLimits {
  account: AccountRow;
  states: LimitState[];
}

/**
 * An account's limits at `nowMs`, with the `available` credits of its pool (micro-credits) and,
 * for an account in a tree, the limits of every account above it (docs/api.md#pools-and-members):
 * each level's `held` is what it and the accounts below it hold.
 */
async function limitsAt(db: Kysely<DB>, projectId: string, ref: AccountQuery, nowMs: number) {
  const account = await resolveAccount(db, projectId, ref);
  if (account.tree_links === 0) {
    const { reserved, available } = await readBalance(db, projectId, account.id, nowMs, {
      externalId: false,
    });
    const states = await statesOf(db, account, nowMs, reserved);
    return { account, available, levels: [{ account, states }] };
  }
  const path = await pathUp(db, account);
  const root = path[path.length - 1] ?? account;
  const tree = await heldTree(db, root.id, nowMs);
  const pool = poolOf(path);
  const available = pool.balance_micros - fundedHeld(tree, pool.id);
  const levels: LevelLimits[] = [];
  for (const level of path) {
    levels.push({
      account: level,
      states: await statesOf(db, level, nowMs, subtreeHeld(tree, level.id)),
    });
  }
  return { account, available, levels };
}

/** The states of `account`'s limits at `nowMs`, with `heldMicros` held at its level. */
async function statesOf(db: Kysely<DB>, account: AccountRow, nowMs: number, heldMicros: number) {
  const limits = parseLimits(account.spend_limits);
  if (limits.length === 0) return [];
  return limitStates(limits, nowMs, await readSpent(db, account.id), heldMicros);
}

/** The largest deduction that would succeed: `available`, or less by a hard limit at any level. */
function spendableOf(available: number, levels: readonly LevelLimits[]): number {
  let most = Math.max(0, available);
  for (const { states } of levels) {
    for (const state of states) {
      if (!state.limit.soft) most = Math.min(most, remainingMicros(state));
    }
  }
  return most;
}

/** The `ancestors` of an answer: every level above the account, nearest first. */
function ancestorsJson(levels: readonly LevelLimits[]) {
  return levels.slice(1).map(({ account, states }) => ({
    accountId: account.id,
    externalId: account.external_id,
    limits: states.map(windowJson),
  }));
}

/** A limit's window as the API shows it. */
function windowJson(state: LimitState): WireOf<typeof limitWindowSchema> {
  return {
    period: state.limit.period,
    amount: fromMicros(state.limit.amountMicros),
    timeZone: state.limit.timeZone,
    soft: state.limit.soft,
    windowStart: isEndless(state.window) ? null : iso(state.window.startMs),
    resetsAt: isEndless(state.window) ? null : iso(state.window.endMs),
    spent: fromMicros(state.spentMicros),
    held: fromMicros(state.heldMicros),
    remaining: fromMicros(remainingMicros(state)),
  };
}

/**
 * `GET /v1/accounts/limits` at `nowMs`.
 * @throws ApiError as `resolveAccount` (accounts/service.ts)
 */
export async function limitsView(
  db: Kysely<DB>,
  projectId: string,
  ref: AccountQuery,
  nowMs: number,
): Promise<WireOf<typeof limitsResponse>> {
  const { account, available, levels } = await limitsAt(db, projectId, ref, nowMs);
  return {
    success: true,
    accountId: account.id,
    externalId: account.external_id,
    available: fromMicros(available),
    spendable: fromMicros(spendableOf(available, levels)),
    limits: (levels[0]?.states ?? []).map(windowJson),
    ancestors: ancestorsJson(levels),
  };
}

/**
 * `GET /v1/accounts/check` at `nowMs`: whether a deduction of `amountMicros` would succeed now,
 * and what it would answer otherwise (INSUFFICIENT_CREDITS first, as the write decides).
 * @throws ApiError as `limitsView`
 */
export async function checkView(
  db: Kysely<DB>,
  projectId: string,
  ref: AccountQuery & { amount: number },
  nowMs: number,
): Promise<WireOf<typeof checkResponse>> {
  const { available, levels } = await limitsAt(db, projectId, ref, nowMs);
  const code =
    ref.amount > available
      ? "INSUFFICIENT_CREDITS"
      : levels.some(({ states }) => refusingLimit(states, ref.amount))
        ? "SPEND_LIMIT_EXCEEDED"
        : null;
  return {
    success: true,
    allowed: code === null,
    code,
    requested: fromMicros(ref.amount),
    available: fromMicros(available),
    spendable: fromMicros(spendableOf(available, levels)),
    limits: (levels[0]?.states ?? []).map(windowJson),
    ancestors: ancestorsJson(levels),
  };
}
