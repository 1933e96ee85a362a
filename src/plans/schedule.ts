/**
 * Plan schedule arithmetic in UTC (docs/api.md#plans-and-grants): `1d` adds a day, `week` 7 days, `month` one
 * calendar month counted from the anchor and clamped to the month's end, so Jan 31 → Feb 28/29
 * → Mar 31 (each date is computed from the anchor, never from the previous clamped date).
 */
import type { PlanInterval } from "../db/schema.ts";

const DAY_MS = 86_400_000;

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** The instant `k` intervals after `anchorMs` (epoch milliseconds), for k ≥ 0. */
export function addIntervals(anchorMs: number, interval: PlanInterval, k: number): number {
  if (interval === "1d") return anchorMs + k * DAY_MS;
  if (interval === "week") return anchorMs + k * 7 * DAY_MS;
  const anchor = new Date(anchorMs);
  const totalMonths = anchor.getUTCMonth() + k;
  const year = anchor.getUTCFullYear() + Math.floor(totalMonths / 12);
  const month = totalMonths % 12;
  const day = Math.min(anchor.getUTCDate(), daysInMonth(year, month));
  return Date.UTC(
    year,
    month,
    day,
    anchor.getUTCHours(),
    anchor.getUTCMinutes(),
    anchor.getUTCSeconds(),
    anchor.getUTCMilliseconds(),
  );
}

/** When grant number `grantsMade` (0-based) is due, or null when `occurrences` are all made. */
export function nextGrantAt(
  anchorMs: number,
  interval: PlanInterval,
  grantsMade: number,
  occurrences: number | null,
): number | null {
  if (occurrences !== null && grantsMade >= occurrences) return null;
  return addIntervals(anchorMs, interval, grantsMade);
}

/** The end of the last period (anchor + occurrences × interval), or null when unlimited. */
export function assignmentExpiresAt(
  anchorMs: number,
  interval: PlanInterval,
  occurrences: number | null,
): number | null {
  return occurrences === null ? null : addIntervals(anchorMs, interval, occurrences);
}
