/**
 * The spend limit reads (docs/api.md#spend-limits): each limit's current window with `spent`,
 * `held` and `remaining`, the account's `spendable`, and the check of a deduction. Reads change
 * nothing and hold nothing; they apply the same rule as the writes (judge.ts).
 */
import type { Kysely } from "kysely";
import { iso } from "../dates.ts";
import type { DB } from "../db/schema.ts";
import { readSpent } from "../limits/counters.ts";
import { type LimitState, limitStates, refusingLimit, remainingMicros } from "../limits/judge.ts";
import { parseLimits } from "../limits/limits.ts";
import type { checkResponse, limitsResponse, limitWindowSchema } from "../limits/schemas.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";
import { readBalance } from "./lookup.ts";
import { type AccountQuery, resolveAccount } from "./service.ts";

/** An account's limits at `nowMs`, with its available credits (micro-credits). */
async function limitsAt(db: Kysely<DB>, projectId: string, ref: AccountQuery, nowMs: number) {
  const account = await resolveAccount(db, projectId, ref);
  const { reserved, available } = await readBalance(db, projectId, account.id, nowMs, {
    externalId: false,
  });
  const limits = parseLimits(account.spend_limits);
  const spent = await readSpent(db, account.id);
  const states = limitStates(limits, nowMs, spent, reserved);
  return { account, available, states };
}

/** The largest deduction that would succeed: `available`, or less by a hard limit. */
function spendableOf(available: number, states: readonly LimitState[]): number {
  let most = Math.max(0, available);
  for (const state of states) {
    if (!state.limit.soft) most = Math.min(most, remainingMicros(state));
  }
  return most;
}

/** A limit's window as the API shows it. */
function windowJson(state: LimitState): WireOf<typeof limitWindowSchema> {
  return {
    period: state.limit.period,
    amount: fromMicros(state.limit.amountMicros),
    timeZone: state.limit.timeZone,
    soft: state.limit.soft,
    windowStart: iso(state.window.startMs),
    resetsAt: iso(state.window.endMs),
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
  const { account, available, states } = await limitsAt(db, projectId, ref, nowMs);
  return {
    success: true,
    accountId: account.id,
    externalId: account.external_id,
    available: fromMicros(available),
    spendable: fromMicros(spendableOf(available, states)),
    limits: states.map(windowJson),
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
  const { available, states } = await limitsAt(db, projectId, ref, nowMs);
  const code =
    ref.amount > available
      ? "INSUFFICIENT_CREDITS"
      : refusingLimit(states, ref.amount)
        ? "SPEND_LIMIT_EXCEEDED"
        : null;
  return {
    success: true,
    allowed: code === null,
    code,
    requested: fromMicros(ref.amount),
    available: fromMicros(available),
    spendable: fromMicros(spendableOf(available, states)),
    limits: states.map(windowJson),
  };
}
