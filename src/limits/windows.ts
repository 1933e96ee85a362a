/**
 * Spend limit windows (docs/api.md#spend-limits): the clock hour, calendar day, week (Monday
 * 00:00 to Monday 00:00) or calendar month that contains an instant, in an IANA time zone. A
 * window is a pure function of the instant, the period and the zone: nothing resets anything,
 * and a service that was down at midnight still starts the new day at midnight. The `total`
 * period has one window, all time: [0, `ENDLESS_MS`), in any zone. A day across a
 * daylight-saving change lasts 23 or 25 hours; an hour in a zone offset by 30 minutes starts at
 * :30 UTC. Zones come from the runtime's ICU data (`Intl.DateTimeFormat`).
 */

/** The periods a spend limit may have (`total`: all time, one window that never ends). */
export const PERIODS = ["hour", "day", "week", "month", "total"] as const;

/** A spend limit's period. */
export type Period = (typeof PERIODS)[number];

/** A window: [startMs, endMs) in epoch milliseconds. */
export interface SpendWindow {
  startMs: number;
  endMs: number;
}

/** The end of a `total` window: never (ranked after every other window's end). */
export const ENDLESS_MS = Number.MAX_SAFE_INTEGER;

/** Whether a window is a `total` limit's, which neither starts nor resets (its bounds: null). */
export function isEndless(window: SpendWindow): boolean {
  return window.endMs === ENDLESS_MS;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The formatter of wall-clock fields in `timeZone` (cached per zone). */
function formatter(timeZone: string): Intl.DateTimeFormat {
  let found = formatters.get(timeZone);
  if (found === undefined) {
    found = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, found);
  }
  return found;
}

/** A zone name is letters, digits, `_`, `-`, `+` and `/` (no offsets such as "+05:30"). */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** True when `timeZone` is an IANA time zone name the runtime knows (case as given). */
export function isTimeZone(timeZone: string): boolean {
  if (timeZone.length > 64 || !ZONE_NAME.test(timeZone)) return false;
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock time in `timeZone` at `instantMs` (whole seconds), read as if it were UTC. */
function wallAt(instantMs: number, timeZone: string): number {
  const f: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(instantMs)) {
    if (part.type !== "literal") f[part.type] = Number(part.value);
  }
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = f;
  return Date.UTC(year, month - 1, day, hour, minute, second);
}

/** The zone's offset from UTC at `instantMs`, in ms (wall − instant). */
function offsetAt(instantMs: number, timeZone: string): number {
  const whole = instantMs - (((instantMs % 1000) + 1000) % 1000);
  return wallAt(whole, timeZone) - whole;
}

/**
 * The first instant whose wall-clock time in `timeZone` is at or after `wallMs` (a wall time
 * read as UTC): the wall time itself when it exists (the earlier of two when the clock went
 * back), else the end of the gap it falls in (the clock went forward over it).
 */
function firstInstantAt(wallMs: number, timeZone: string): number {
  const candidates = [
    wallMs - offsetAt(wallMs - DAY_MS, timeZone),
    wallMs - offsetAt(wallMs + DAY_MS, timeZone),
  ].sort((a, b) => a - b);
  for (const candidate of candidates) {
    if (wallAt(candidate, timeZone) === wallMs) return candidate;
  }
  // In a gap: the first instant whose wall time passes wallMs lies between the two.
  let [low = wallMs, high = wallMs] = candidates;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (wallAt(middle, timeZone) >= wallMs) high = middle;
    else low = middle;
  }
  return high;
}

/** The wall-clock start of the day, week or month whose wall time `wallMs` is in, and the next. */
function calendarBounds(
  wallMs: number,
  period: Exclude<Period, "hour" | "total">,
): [number, number] {
  const date = new Date(wallMs);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  const day = date.getUTCDate();
  if (period === "month") return [Date.UTC(year, month, 1), Date.UTC(year, month + 1, 1)];
  if (period === "day") return [Date.UTC(year, month, day), Date.UTC(year, month, day + 1)];
  const back = (date.getUTCDay() + 6) % 7; // days since Monday
  return [Date.UTC(year, month, day - back), Date.UTC(year, month, day - back + 7)];
}

const lastWindows = new Map<string, SpendWindow>();

/**
 * The window of `period` in `timeZone` that contains `instantMs` (docs/api.md#spend-limits).
 * An hour is the clock hour at the zone's offset at that instant; a day, week or month runs from
 * the first instant of its first wall-clock day to the first instant of the next one.
 * @throws RangeError for a zone the runtime does not know (validate with `isTimeZone`)
 */
export function windowAt(instantMs: number, period: Period, timeZone: string): SpendWindow {
  const key = `${period} ${timeZone}`;
  const last = lastWindows.get(key);
  if (last !== undefined && instantMs >= last.startMs && instantMs < last.endMs) return last;
  const window = computeWindow(instantMs, period, timeZone);
  if (lastWindows.size > 4096) lastWindows.clear();
  lastWindows.set(key, window);
  return window;
}

/** `windowAt` without its cache. */
export function computeWindow(instantMs: number, period: Period, timeZone: string): SpendWindow {
  if (period === "total") return { startMs: 0, endMs: ENDLESS_MS };
  if (period === "hour") {
    const offset = offsetAt(instantMs, timeZone);
    const into = (((instantMs + offset) % HOUR_MS) + HOUR_MS) % HOUR_MS;
    return { startMs: instantMs - into, endMs: instantMs - into + HOUR_MS };
  }
  const [start, end] = calendarBounds(wallAt(instantMs, timeZone), period);
  return { startMs: firstInstantAt(start, timeZone), endMs: firstInstantAt(end, timeZone) };
}
