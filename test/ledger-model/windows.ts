/**
 * Spend-limit windows of the model (contract section 18), written from the contract and not from
 * the service: the clock hour, calendar day, week (Monday 00:00 to Monday 00:00) or calendar month
 * containing an instant, in the limit's time zone. The model uses zones with a fixed offset only
 * (no daylight saving), among them offsets of 30 and 45 minutes, whose hours start off the UTC
 * hour.
 */

export type Period = "hour" | "day" | "week" | "month";

/** The zones the model sets limits in, with their fixed offsets from UTC in ms. */
export const ZONES = {
  UTC: 0,
  "Asia/Kolkata": (5 * 60 + 30) * 60_000,
  "Asia/Kathmandu": (5 * 60 + 45) * 60_000,
} as const;

export type Zone = keyof typeof ZONES;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The window `[startMs, endMs)` of `period` in `zone` that contains `atMs`. */
export function windowOf(
  atMs: number,
  period: Period,
  zone: Zone,
): { startMs: number; endMs: number } {
  const offset = ZONES[zone];
  const local = atMs + offset;
  if (period === "hour" || period === "day") {
    const size = period === "hour" ? HOUR : DAY;
    const start = Math.floor(local / size) * size - offset;
    return { startMs: start, endMs: start + size };
  }
  const day = Math.floor(local / DAY);
  if (period === "week") {
    // 1970-01-01 was a Thursday: Monday is 3 days before day 0's weekday index.
    const monday = day - ((day + 3) % 7);
    const start = monday * DAY - offset;
    return { startMs: start, endMs: start + 7 * DAY };
  }
  const date = new Date(day * DAY);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  return {
    startMs: Date.UTC(year, month, 1) - offset,
    endMs: Date.UTC(year, month + 1, 1) - offset,
  };
}
