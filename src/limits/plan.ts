/**
 * What the limited plain debit (src/limits/plain.ts, docs/design.md#spend-limits) needs of an
 * account's limits at an instant, computed once per limits text and reused while it holds. A
 * limit's window is a pure function of the instant, its period and its zone (windows.ts), and
 * each (period, zone) has one window at a time, so every instant in the intersection of the
 * current windows, [latest start, earliest end), has the same windows: the plan holds exactly
 * there, and the first request outside it (a window ended) computes the next one.
 */
import { type CountedWindow, windowsAt } from "./counters.ts";
import { parseLimits, type SpendLimit } from "./limits.ts";
import { windowAt } from "./windows.ts";

/** An account's limits (by their stored text) and their windows, valid in [fromMs, untilMs). */
export interface LimitPlan {
  text: string;
  limits: readonly SpendLimit[];
  /** Each limit's window, in the order of `limits`. */
  limitWindows: readonly CountedWindow[];
  /** The distinct windows of the limits (one per period and zone): the counters a debit adds to. */
  windows: readonly CountedWindow[];
  /** The latest start of the windows, epoch ms: the plan holds from it … */
  fromMs: number;
  /** … to the earliest end (excluded). */
  untilMs: number;
}

const plans = new Map<string, LimitPlan>();
const MAX_PLANS = 10_000;

/** The plan of the limits text `text` at `atMs` (epoch ms), computed only when `atMs` left it. */
export function limitPlan(text: string, atMs: number): LimitPlan {
  const cached = plans.get(text);
  if (cached !== undefined && atMs >= cached.fromMs && atMs < cached.untilMs) return cached;
  const plan = computePlan(text, atMs);
  if (plans.size >= MAX_PLANS) plans.clear();
  plans.set(text, plan);
  return plan;
}

/** `limitPlan` without its cache. */
export function computePlan(text: string, atMs: number): LimitPlan {
  const limits = parseLimits(text);
  const limitWindows = limits.map(({ period, timeZone }) => {
    const { startMs, endMs } = windowAt(atMs, period, timeZone);
    return { period, timeZone, startMs, endMs };
  });
  const windows = windowsAt(limits, atMs);
  const fromMs = Math.max(...windows.map((w) => w.startMs));
  const untilMs = Math.min(...windows.map((w) => w.endMs));
  return { text, limits, limitWindows, windows, fromMs, untilMs };
}
