/**
 * The random choices of the ledger model test: a seeded PRNG, and operations drawn from the
 * model's state so that they meet the boundaries that matter (amounts at and around `available`,
 * holds over most of the credits, confirms below, at and above their hold, expiries seconds
 * away, limits nearly spent).
 */
import type { LedgerModel, Limit } from "./model.ts";
import type { Op, Usage } from "./ops.ts";
import { ZONES, type Zone } from "./windows.ts";

/** A small seeded PRNG (mulberry32), so that a failing run can be repeated. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    chance: (p: number) => next() < p,
  };
}

export type Rng = ReturnType<typeof prng>;

const CREDIT = 1_000_000;

/** Draws operations for `m`'s accounts at the time `now()`. */
export class Generator {
  constructor(
    private readonly r: Rng,
    private readonly m: LedgerModel,
    private readonly now: () => number,
    private readonly exts: readonly string[],
    private readonly models: readonly string[],
  ) {}

  /** Micro-credits up to `hiCredits`, at a random granularity (whole, cents or micro-credits). */
  amount(hiCredits: number): number {
    const unit = this.r.pick([1, 1_000, 10_000, 10_000, CREDIT]);
    return Math.max(
      unit,
      this.r.int(1, Math.max(1, Math.floor((hiCredits * CREDIT) / unit))) * unit,
    );
  }

  /** Around `available`: below, at, one micro-credit over, or a share of it. */
  near(available: number, hiCredits: number): number {
    if (available <= 0 || this.r.chance(0.4)) return this.amount(hiCredits);
    return Math.max(
      1,
      this.r.pick([
        available,
        available + 1,
        available - 1,
        Math.floor((available * this.r.int(30, 100)) / 100),
      ]),
    );
  }

  limits(): Limit[] {
    return Array.from({ length: this.r.pick([0, 1, 1, 2, 3]) }, () => ({
      period: this.r.pick(["hour", "day", "week", "month"] as const),
      amount: this.amount(150) + 10 * CREDIT,
      timeZone: this.r.pick(Object.keys(ZONES) as Zone[]),
      soft: this.r.chance(0.25),
    }));
  }

  threshold(): number | null {
    return this.r.chance(0.3) ? null : this.r.pick([0, this.amount(25), this.amount(5)]);
  }

  usage(): Usage {
    const inputTokens = this.r.int(1, 200_000);
    return {
      modelId: this.r.pick(this.models),
      inputTokens,
      cachedTokens: this.r.chance(0.3) ? this.r.int(0, inputTokens) : 0,
      outputTokens: this.r.int(0, 40_000),
    };
  }

  /** A hold to settle: mostly pending ones, sometimes settled or unknown ones. */
  hold(): number | null {
    const holds = this.m.state.holds.filter((h) => h.id !== null);
    const pending = holds.filter((h) => h.state === "pending" && h.expiresAt > this.now());
    if (this.r.chance(0.03)) return null;
    const from = pending.length > 0 && this.r.chance(0.85) ? pending : holds;
    return from.length === 0 ? null : this.r.pick(from).key;
  }

  /** An actual amount for `hold`: 0, below, equal, or above it (near what is available). */
  actual(key: number | null): number {
    const hold = this.m.state.holds.find((h) => h.key === key);
    if (!hold) return this.amount(10);
    const available = this.m.available(hold.ext, this.now());
    return this.r.pick([
      0,
      this.r.int(0, hold.amount),
      hold.amount,
      hold.amount + this.near(available, 10),
    ]);
  }

  op(): Op {
    const r = this.r;
    const ext = r.pick(this.exts);
    const available = this.m.available(ext, this.now());
    const kind = r.pick([
      "add",
      "add",
      "add",
      "add",
      "add",
      "debit",
      "debit",
      "debit",
      "reserve",
      "reserve",
      "confirm",
      "confirm",
      "cancel",
      "charge",
      "confirmUsage",
      "update",
      r.chance(0.5) ? "invalid" : "add",
    ] as const);
    switch (kind) {
      case "add": {
        const expiresAt = r.chance(0.4)
          ? undefined
          : this.now() + (r.chance(0.03) ? 0 : r.pick([r.int(1, 999), r.int(1000, 8000)]));
        return {
          kind,
          ext,
          amount: this.amount(r.pick([5, 40])),
          ...(r.chance(0.3) ? {} : { priority: r.pick([0, 10, 50, 90, 100]) }),
          ...(expiresAt === undefined ? {} : { expiresAt }),
          manual: r.chance(0.3),
        };
      }
      case "debit":
        return { kind, ext, amount: this.near(available, 30), manual: r.chance(0.3) };
      case "reserve": {
        const most = Math.floor((available * r.int(50, 100)) / 100);
        const amount = r.chance(0.4) && most > 0 ? most : this.near(available, 30);
        return { kind, ext, amount, ttlSeconds: r.int(1, 10) };
      }
      case "confirm": {
        const hold = this.hold();
        return { kind, hold, actual: this.actual(hold) };
      }
      case "confirmUsage":
        return { kind, hold: this.hold(), usage: this.usage() };
      case "cancel":
        return { kind, hold: this.hold() };
      case "charge":
        return { kind, ext, usage: this.usage() };
      case "update":
        return {
          kind,
          ext,
          ...(r.chance(0.7) ? { threshold: this.threshold() } : {}),
          ...(r.chance(0.5) ? { limits: this.limits() } : {}),
        };
      case "invalid":
        return r.chance(0.3)
          ? { kind, ext }
          : { kind: "debit", ext, amount: available, manual: false };
    }
  }
}
