/**
 * The spend limit rule (docs/api.md#spend-limits), as a pure function: given an account's
 * limits, what each window spent and holds, and what a write adds, which limit refuses it and
 * which limits it makes reached. Each comparison is the admission rule's (src/admission/rule.ts
 * `passesLimit`, `reachesLimit`), evaluated on numbers; the general path of every write that
 * spends (src/limits/enforce.ts) and the reads (src/accounts/limit-view.ts) apply it.
 */
import { type LimitTerms, numbers, passesLimit, reachesLimit } from "../admission/rule.ts";
import { iso } from "../dates.ts";
import { ApiError } from "../errors.ts";
import { fromMicros } from "../money.ts";
import { type CountedWindow, windowKey } from "./counters.ts";
import type { SpendLimit } from "./limits.ts";
import { isEndless, windowAt } from "./windows.ts";

/** One limit's current window with its figures (micro-credits). */
export interface LimitState {
  limit: SpendLimit;
  window: CountedWindow;
  /** Spending debits booked in the window before the write. */
  spentMicros: number;
  /** Pending, unexpired holds of the account before the write. */
  heldMicros: number;
}

/** Each limit's state at `atMs`, from the windows' sums (window key → micro-credits). */
export function limitStates(
  limits: readonly SpendLimit[],
  atMs: number,
  spent: ReadonlyMap<string, number>,
  heldMicros: number,
): LimitState[] {
  return limits.map((limit) => {
    const { startMs, endMs } = windowAt(atMs, limit.period, limit.timeZone);
    const window = { period: limit.period, timeZone: limit.timeZone, startMs, endMs };
    return { limit, window, spentMicros: spent.get(windowKey(window)) ?? 0, heldMicros };
  });
}

/** What is left of a limit in its window: max(0, amount − spent − held), micro-credits. */
export function remainingMicros(state: LimitState): number {
  return Math.max(0, state.limit.amountMicros - state.spentMicros - state.heldMicros);
}

/**
 * The hard limit that refuses a write adding `neededMicros` (> 0) to spend (spent + held), when
 * some would be passed: of those, the one whose window ends last (the first of them on a tie).
 */
export function refusingLimit(
  states: readonly LimitState[],
  neededMicros: number,
): LimitState | undefined {
  let refusing: LimitState | undefined;
  for (const state of states) {
    if (state.limit.soft) continue;
    if (!passesLimit(numbers, termsOf(state, neededMicros))) continue;
    if (refusing === undefined || state.window.endMs > refusing.window.endMs) refusing = state;
  }
  return refusing;
}

/** The limits a write adding `neededMicros` to spend takes from below their amount to it or above. */
export function reachedLimits(states: readonly LimitState[], neededMicros: number): LimitState[] {
  return states.filter((state) => reachesLimit(numbers, termsOf(state, neededMicros)));
}

/** A limit's figures at a write adding `neededMicros`, as the admission rule takes them. */
export function termsOf(state: LimitState, neededMicros: number): LimitTerms<number> {
  return {
    spent: state.spentMicros,
    held: state.heldMicros,
    needed: neededMicros,
    amount: state.limit.amountMicros,
  };
}

/** The whole seconds from `nowMs` until `endMs`, rounded up (the `Retry-After` header). */
export function retryAfterSeconds(endMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil((endMs - nowMs) / 1000));
}

/**
 * The 402 SPEND_LIMIT_EXCEEDED of `state` for a write of `neededMicros` at `nowMs`: `details`
 * `{period, limit, timeZone, spent, held, requested, remaining, resetsAt}` and the
 * `Retry-After` header (for a `total` limit, `resetsAt` null and no header); with `level`, the
 * account whose limit it is (docs/api.md#pools-and-members) as `accountId` and `externalId`.
 */
export function spendLimitError(
  state: LimitState,
  neededMicros: number,
  nowMs: number,
  level?: { id: string; external_id: string },
): ApiError {
  const { limit, window } = state;
  const endless = isEndless(window);
  const details = {
    period: limit.period,
    limit: fromMicros(limit.amountMicros),
    timeZone: limit.timeZone,
    spent: fromMicros(state.spentMicros),
    held: fromMicros(state.heldMicros),
    requested: fromMicros(neededMicros),
    remaining: fromMicros(remainingMicros(state)),
    resetsAt: endless ? null : iso(window.endMs),
    ...(level === undefined ? {} : { accountId: level.id, externalId: level.external_id }),
  };
  return new ApiError(
    "SPEND_LIMIT_EXCEEDED",
    `The ${limit.period} spend limit of ${details.limit} credits would be passed`,
    details,
    // A `total` limit never resets: retrying later changes nothing.
    endless ? undefined : { "Retry-After": String(retryAfterSeconds(window.endMs, nowMs)) },
  );
}
