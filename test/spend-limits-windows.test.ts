import { describe, expect, it } from "vitest";
import { limitsText } from "../src/limits/limits.ts";
import { pgArray } from "../src/limits/plain.ts";
import { computePlan, limitPlan } from "../src/limits/plan.ts";
import { computeWindow, isTimeZone, windowAt } from "../src/limits/windows.ts";

const at = (iso: string) => Date.parse(iso);
const window = (instant: string, period: "hour" | "day" | "week" | "month", zone: string) => {
  const w = computeWindow(at(instant), period, zone);
  return [new Date(w.startMs).toISOString(), new Date(w.endMs).toISOString()];
};

describe("spend limit windows (docs/api.md#spend-limits)", () => {
  it("UTC: hour, day, week from Monday, month", () => {
    expect(window("2026-11-27T05:32:10.123Z", "hour", "UTC")).toEqual([
      "2026-11-27T05:00:00.000Z",
      "2026-11-27T06:00:00.000Z",
    ]);
    expect(window("2026-11-27T23:59:59.999Z", "day", "UTC")).toEqual([
      "2026-11-27T00:00:00.000Z",
      "2026-11-28T00:00:00.000Z",
    ]);
    expect(window("2026-11-28T00:00:00.000Z", "day", "UTC")[0]).toBe("2026-11-28T00:00:00.000Z");
    // 2026-11-27 is a Friday; its week began on Monday the 23rd.
    expect(window("2026-11-27T12:00:00Z", "week", "UTC")).toEqual([
      "2026-11-23T00:00:00.000Z",
      "2026-11-30T00:00:00.000Z",
    ]);
    expect(window("2026-11-30T00:00:00Z", "week", "UTC")[0]).toBe("2026-11-30T00:00:00.000Z");
    expect(window("2026-11-29T23:59:59.999Z", "week", "UTC")[0]).toBe("2026-11-23T00:00:00.000Z");
    expect(window("2028-02-29T12:00:00Z", "month", "UTC")).toEqual([
      "2028-02-01T00:00:00.000Z",
      "2028-03-01T00:00:00.000Z",
    ]);
    expect(window("2026-12-31T23:00:00Z", "month", "UTC")[1]).toBe("2027-01-01T00:00:00.000Z");
  });

  it("Asia/Kolkata: the day ends at 18:30 UTC, hours start at :30", () => {
    expect(window("2026-11-27T18:29:59.999Z", "day", "Asia/Kolkata")).toEqual([
      "2026-11-26T18:30:00.000Z",
      "2026-11-27T18:30:00.000Z",
    ]);
    expect(window("2026-11-27T18:30:00.000Z", "day", "Asia/Kolkata")[0]).toBe(
      "2026-11-27T18:30:00.000Z",
    );
    expect(window("2026-11-27T05:10:00Z", "hour", "Asia/Kolkata")).toEqual([
      "2026-11-27T04:30:00.000Z",
      "2026-11-27T05:30:00.000Z",
    ]);
    expect(window("2026-11-27T05:10:00Z", "hour", "Asia/Kathmandu")[0]).toBe(
      "2026-11-27T05:00:00.000Z".replace("05:00", "04:15"),
    );
  });

  it("America/New_York: days of 23 and 25 hours across daylight saving", () => {
    // 2026-03-08: clocks go from 02:00 EST to 03:00 EDT.
    const spring = computeWindow(at("2026-03-08T12:00:00Z"), "day", "America/New_York");
    expect(new Date(spring.startMs).toISOString()).toBe("2026-03-08T05:00:00.000Z");
    expect(new Date(spring.endMs).toISOString()).toBe("2026-03-09T04:00:00.000Z");
    expect(spring.endMs - spring.startMs).toBe(23 * 3_600_000);
    // 2026-11-01: clocks go from 02:00 EDT back to 01:00 EST.
    const fall = computeWindow(at("2026-11-01T12:00:00Z"), "day", "America/New_York");
    expect(new Date(fall.startMs).toISOString()).toBe("2026-11-01T04:00:00.000Z");
    expect(fall.endMs - fall.startMs).toBe(25 * 3_600_000);
    // The repeated hour 01:00–02:00 is two windows of one hour each.
    expect(window("2026-11-01T05:30:00Z", "hour", "America/New_York")).toEqual([
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T06:00:00.000Z",
    ]);
    expect(window("2026-11-01T06:30:00Z", "hour", "America/New_York")).toEqual([
      "2026-11-01T06:00:00.000Z",
      "2026-11-01T07:00:00.000Z",
    ]);
    // The week and month containing the change.
    expect(window("2026-03-10T12:00:00Z", "week", "America/New_York")).toEqual([
      "2026-03-09T04:00:00.000Z",
      "2026-03-16T04:00:00.000Z",
    ]);
    expect(window("2026-03-01T12:00:00Z", "month", "America/New_York")).toEqual([
      "2026-03-01T05:00:00.000Z",
      "2026-04-01T04:00:00.000Z",
    ]);
  });

  it("a day that starts after a gap at midnight starts when the clock jumps", () => {
    // America/Santiago: 2026-09-06 00:00 -04 becomes 01:00 -03 (04:00 UTC).
    const w = computeWindow(at("2026-09-06T12:00:00Z"), "day", "America/Santiago");
    expect(new Date(w.startMs).toISOString()).toBe("2026-09-06T04:00:00.000Z");
    expect(new Date(w.endMs).toISOString()).toBe("2026-09-07T03:00:00.000Z");
  });

  it("every instant lies in its window, and consecutive windows tile", () => {
    for (const zone of ["UTC", "Asia/Kolkata", "America/New_York", "Australia/Adelaide"]) {
      for (const period of ["hour", "day", "week", "month"] as const) {
        // Hours over the spring and autumn changes; the rest over the whole year.
        let t = at(period === "hour" ? "2026-03-01T00:00:00Z" : "2026-01-01T00:00:00Z");
        const until = at(period === "hour" ? "2026-04-15T00:00:00Z" : "2026-12-31T00:00:00Z");
        let previous: { startMs: number; endMs: number } | undefined;
        while (t < until) {
          const w = windowAt(t, period, zone);
          expect(t >= w.startMs && t < w.endMs).toBe(true);
          if (previous && previous.endMs <= t) expect(w.startMs).toBe(previous.endMs);
          previous = w;
          t += period === "hour" ? 1_234_567 : 7_777_777;
        }
      }
    }
  });

  it("validates IANA names", () => {
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("Asia/Kolkata")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
    expect(isTimeZone("+05:30")).toBe(false);
    expect(isTimeZone("")).toBe(false);
  });
});

describe("the limited plain debit's plan (src/limits/plan.ts)", () => {
  const text = limitsText([
    { period: "hour", amountMicros: 100_000_000, timeZone: "UTC", soft: false },
    { period: "day", amountMicros: 200_000_000, timeZone: "Asia/Kolkata", soft: false },
    { period: "day", amountMicros: 300_000_000, timeZone: "Asia/Kolkata", soft: true },
  ]);
  const starts = (iso: string) =>
    limitPlan(text ?? "", at(iso)).windows.map((w) => new Date(w.startMs).toISOString());

  it("holds from the latest window start to the earliest end, then takes the new windows", () => {
    const plan = limitPlan(text ?? "", at("2026-11-27T17:59:59.999Z"));
    expect(plan.fromMs).toBe(at("2026-11-27T17:00:00.000Z"));
    expect(plan.untilMs).toBe(at("2026-11-27T18:00:00.000Z"));
    // One counter per (period, zone); each limit keeps its own window.
    expect(plan.windows).toHaveLength(2);
    expect(plan.limitWindows).toHaveLength(3);
    expect(limitPlan(text ?? "", at("2026-11-27T17:00:00.000Z"))).toBe(plan);
    expect(starts("2026-11-27T18:00:00.000Z")).toEqual([
      "2026-11-27T18:00:00.000Z",
      "2026-11-26T18:30:00.000Z",
    ]);
    // The Kolkata day ends inside this hour, at 18:30 UTC.
    expect(limitPlan(text ?? "", at("2026-11-27T18:00:00.000Z")).untilMs).toBe(
      at("2026-11-27T18:30:00.000Z"),
    );
    expect(starts("2026-11-27T18:30:00.000Z")).toEqual([
      "2026-11-27T18:00:00.000Z",
      "2026-11-27T18:30:00.000Z",
    ]);
    // A clock moved back (another process's instant) gets its own windows too.
    expect(starts("2026-11-27T17:59:59.999Z")).toEqual([
      "2026-11-27T17:00:00.000Z",
      "2026-11-26T18:30:00.000Z",
    ]);
    for (const iso of ["2026-11-27T18:29:59.999Z", "2026-11-30T23:59:59.999Z"]) {
      expect(limitPlan(text ?? "", at(iso))).toEqual(computePlan(text ?? "", at(iso)));
    }
  });
});

describe("the limited plain debit's array arguments (PostgreSQL)", () => {
  it("writes each list as the text of an array, texts quoted and escaped", () => {
    expect(pgArray(["hour", "America/Argentina/Buenos_Aires", 'a"b\\c'])).toBe(
      '{"hour","America/Argentina/Buenos_Aires","a\\"b\\\\c"}',
    );
    expect(pgArray([1795770000000, 9_000_000_000_000_000])).toBe(
      "{1795770000000,9000000000000000}",
    );
    expect(pgArray([true, false])).toBe("{t,f}");
    expect(pgArray([])).toBe("{}");
  });
});
