/**
 * Instants on the wire: `iso` writes epoch milliseconds as the API's ISO 8601 UTC timestamps, and
 * the one strict date parser of every route that takes dates (docs/api.md, "Balance
 * adjustments and transactions") reads them: a date `YYYY-MM-DD`, or a date-time
 * `YYYY-MM-DDTHH:MM[:SS[.fraction]]` with `Z`, `±HH:MM` or no offset (then UTC). Every field must
 * be in the calendar (`2026-02-30` and `2025-02-29` are refused, never rolled over) and anything
 * else is refused, so a malformed filter is a 400 instead of a silently empty page.
 */

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?)?$/;

const DAY_MS = 86_400_000;

/** ISO 8601 UTC timestamp of epoch milliseconds. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A parsed date parameter: its instant in epoch milliseconds, and whether it was a bare date. */
export interface ParsedDate {
  ms: number;
  dateOnly: boolean;
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Parses a date or date-time parameter strictly.
 * @returns the instant (a fraction finer than a millisecond is truncated), or null when the text
 *   is not one of the accepted forms or names a day or time that does not exist
 */
export function parseDateParam(text: string): ParsedDate | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, offset] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  // setUTCFullYear keeps a year as written (Date.UTC would map years 0–99 to 1900–1999).
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (h === undefined) return { ms: date.getTime(), dateOnly: true };
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (offset !== undefined && offset !== "Z") {
    const oh = Number(offset.slice(1, 3));
    const om = Number(offset.slice(4, 6));
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (offset.startsWith("-") ? -1 : 1) * (oh * 60 + om);
  }
  const millis = frac === undefined ? 0 : Number(frac.padEnd(3, "0").slice(0, 3));
  const ms = date.getTime() + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + millis;
  return { ms, dateOnly: false };
}

/**
 * The inclusive epoch-millisecond bound of a parsed `startDate` or `endDate`: a bare date as an
 * end covers its whole UTC day (its last millisecond).
 */
export function boundMs(parsed: ParsedDate, end: boolean): number {
  return end && parsed.dateOnly ? parsed.ms + DAY_MS - 1 : parsed.ms;
}

/**
 * Epoch-millisecond bounds of `startDate`/`endDate` query parameters that their schema already
 * validated (`undefined` where not given), both inclusive.
 * @throws Error when a date was not validated (a bug, not a client error)
 */
export function dateRangeMs(startDate?: string, endDate?: string) {
  const bound = (text: string | undefined, end: boolean) => {
    if (text === undefined) return undefined;
    const parsed = parseDateParam(text);
    if (!parsed) throw new Error(`date ${text} was not validated`);
    return boundMs(parsed, end);
  };
  return { startMs: bound(startDate, false), endMs: bound(endDate, true) };
}
