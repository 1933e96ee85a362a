/**
 * One debit rule (docs/design.md#plain-writes): one table of cases, each run through the plain
 * path and through the general path on this run's engine, comparing the HTTP answers, the ledger
 * rows, the grants, the holds, the accounts and the events stored for webhooks.
 *
 * Two ledgers on one fake clock run the same requests: one as served (the write path tries each
 * write's plain form first, and the test counts the times it made the write), and one whose
 * write path is given the writes without their plain form (`generalOnly`), so that every write
 * takes the general path. Each case says whether its last write is plain, so the table is known
 * to reach both paths.
 *
 * The table holds each comparison of the plain rule at its bound, one micro-credit each side:
 * `available` against what the write needs, the first grant's remaining against the amount,
 * `available` before and after against the low-balance threshold, and each limit's spent + held
 * + amount against its amount, with windows that have already spent; and the windows' edges in
 * time (the clock past an hour or a Kolkata day, another process's clock ahead), and limits
 * changed by this process or by another one that this process has not heard of. Flipping any of
 * those comparisons, or moving its bound by one micro-credit, fails a case on each engine.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  covers,
  crosses,
  numbers,
  passesLimit,
  plainDebit,
  plainLimit,
  reachesLimit,
} from "../src/admission/rule.ts";
import { spendingOrder } from "../src/ledger/grants.ts";
import {
  type Boundary,
  canonical,
  DAY,
  HOUR,
  type Limit,
  nextBoundary,
  type PlainExpected,
  plainOn,
  post,
  type Side,
  twoSides,
} from "./equivalence-kit.ts";
import type { TestLedger } from "./harness.ts";
import { TEST_ENGINE } from "./pg-harness.ts";

/** Asia/Kolkata is UTC+05:30 all year: its day starts at 18:30 UTC. */
const KOLKATA_OFFSET_MS = 5.5 * HOUR;

/** Three limits that the cases do not reach. */
const THREE_LIMITS = [
  { period: "hour", amount: 1000 },
  { period: "day", amount: 2000, timeZone: "Europe/Paris" },
  { period: "month", amount: 5000 },
];

interface Case {
  name: string;
  /** The account's low-balance threshold, credits. */
  threshold?: number;
  /** The account's spend limits (docs/api.md#spend-limits), set when it is created. */
  limits?: Limit[];
  /** The credits added, in order: amount, priority, hours until expiry. */
  grants: { amount: number; priority?: number; expiresInHours?: number }[];
  /** Deductions made after the grants, before the holds: what the windows have already spent. */
  spend?: number[];
  /** The holds made after the grants. */
  holds?: { amount: number; ttlSeconds?: number; metadata?: Record<string, unknown> }[];
  /** The first hold made as before migration 0008: without its confirm's text. */
  before0008?: boolean;
  /** Hours the clock moves after the holds, before the write. */
  advanceHours?: number;
  /** Where the clock moves then (a window's end or start), before the write. */
  moveTo?: Boundary;
  /**
   * The limits replaced by `POST /v1/accounts/update` just before the write; `stale`: by another
   * process (another app on the same database), so this process still knows the limits before.
   */
  setLimits?: { limits: Limit[] | null; stale?: boolean };
  /**
   * Just before the write, another process whose clock is at `at` adds `amount` credits: the
   * account's last move is later than this process's clock.
   */
  creditAhead?: { amount: number; at: Boundary };
  /** The write compared: a deduction, a manual debit, a confirm of the first hold, a hold. */
  write: { deduct: number } | { manual: number } | { confirm: number } | { reserve: number };
  /** Send the write with an Idempotency-Key (and send it twice). */
  key?: boolean;
  /** Name the account by its internal id rather than its externalId. */
  byId?: boolean;
  /** Whether the write is plain (made by the plain path on the served ledger), per engine. */
  plain: PlainExpected;
}

const CASES: Case[] = [
  { name: "deduct, one grant", grants: [{ amount: 100 }], write: { deduct: 30 }, plain: true },
  {
    name: "deduct with a key, by id",
    grants: [{ amount: 100 }],
    write: { deduct: 30 },
    key: true,
    byId: true,
    plain: true,
  },
  {
    name: "deduct crossing the threshold",
    threshold: 50,
    grants: [{ amount: 100 }],
    write: { deduct: 60 },
    plain: false,
  },
  {
    name: "deduct crossing the threshold, with a key",
    threshold: 50,
    grants: [{ amount: 100 }],
    write: { deduct: 60 },
    key: true,
    plain: false,
  },
  {
    name: "deduct down to the threshold exactly",
    threshold: 40,
    grants: [{ amount: 100 }],
    write: { deduct: 60 },
    plain: true,
  },
  {
    name: "deduct already below the threshold, with a key",
    threshold: 200,
    grants: [{ amount: 100 }],
    write: { deduct: 10 },
    key: true,
    plain: true,
  },
  {
    name: "deduct from the first of several grants (priority, then expiry)",
    grants: [
      { amount: 100 },
      { amount: 20, priority: 10, expiresInHours: 48 },
      { amount: 20, priority: 10, expiresInHours: 24 },
    ],
    write: { deduct: 15 },
    plain: true,
  },
  {
    name: "deduct across several grants",
    threshold: 5,
    grants: [
      { amount: 30, priority: 60 },
      { amount: 20, priority: 10 },
      { amount: 25, priority: 10, expiresInHours: 72 },
    ],
    write: { deduct: 50 },
    plain: false,
  },
  {
    name: "deduct with an expiry due",
    grants: [{ amount: 50, expiresInHours: 1 }, { amount: 100 }],
    advanceHours: 2,
    write: { deduct: 10 },
    plain: false,
  },
  {
    name: "deduct beyond available",
    grants: [{ amount: 50 }],
    holds: [{ amount: 30 }],
    write: { deduct: 25 },
    plain: false,
  },
  {
    name: "manual debit with a key",
    threshold: 10,
    grants: [{ amount: 100 }],
    write: { manual: 25 },
    key: true,
    plain: true,
  },
  {
    name: "confirm less than the hold",
    grants: [{ amount: 100 }],
    holds: [{ amount: 40, metadata: { model: "m", reservationId: "theirs" } }],
    write: { confirm: 25 },
    plain: true,
  },
  {
    name: "confirm the hold exactly, with a key",
    threshold: 30,
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }],
    write: { confirm: 40 },
    key: true,
    plain: true,
  },
  {
    name: "confirm 0",
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }],
    write: { confirm: 0 },
    plain: true,
  },
  {
    name: "confirm more than the hold",
    grants: [{ amount: 100 }],
    holds: [{ amount: 40, metadata: { a: [1, 2.5] } }],
    write: { confirm: 55 },
    plain: true,
  },
  {
    name: "confirm more than the hold, crossing the threshold",
    threshold: 50,
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }],
    write: { confirm: 55 },
    key: true,
    plain: false,
  },
  {
    name: "confirm a hold made before migration 0008",
    grants: [{ amount: 100 }],
    holds: [{ amount: 40, metadata: { model: "m" } }],
    before0008: true,
    write: { confirm: 25 },
    plain: false,
  },
  {
    name: "confirm more than available",
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }, { amount: 50 }],
    write: { confirm: 60 },
    plain: false,
  },
  {
    name: "confirm a hold past its expiry",
    grants: [{ amount: 100 }],
    holds: [{ amount: 40, ttlSeconds: 60 }],
    advanceHours: 1,
    write: { confirm: 10 },
    plain: false,
  },
  {
    name: "confirm a hold on a grant expired while held",
    grants: [
      { amount: 50, expiresInHours: 1 },
      { amount: 30, priority: 90 },
    ],
    holds: [{ amount: 40, ttlSeconds: 86_400 }],
    advanceHours: 2,
    write: { confirm: 30 },
    plain: false,
  },
  {
    name: "reserve",
    threshold: 10,
    grants: [{ amount: 100 }],
    write: { reserve: 30 },
    plain: true,
  },
  {
    name: "reserve crossing the threshold",
    threshold: 80,
    grants: [{ amount: 100 }],
    write: { reserve: 30 },
    plain: false,
  },
  // Spend limits: the plain paths refuse every write of an account with limits but the limited
  // plain debit, and the general path enforces them (src/limits/enforce.ts). The limited plain
  // debit (src/limits/plain.ts) reads the account's stored limits in its own statement, and
  // applies only to writes that no limit refuses and that reach none.
  {
    name: "deduct under three limits",
    limits: THREE_LIMITS,
    grants: [{ amount: 100 }],
    write: { deduct: 30 },
    plain: true,
  },
  {
    name: "deduct under three limits after a hold, by id",
    limits: THREE_LIMITS,
    grants: [{ amount: 100 }],
    holds: [{ amount: 10 }],
    write: { deduct: 30 },
    byId: true,
    plain: true,
  },
  {
    name: "manual debit under a limit after a hold, with a key",
    limits: [{ period: "day", amount: 50, timeZone: "Asia/Kolkata" }],
    grants: [{ amount: 100 }],
    holds: [{ amount: 10 }],
    write: { manual: 39.999999 },
    key: true,
    plain: true,
  },
  {
    name: "deduct reaching a limit exactly after a hold",
    limits: [{ period: "day", amount: 50 }],
    grants: [{ amount: 100 }],
    holds: [{ amount: 10 }],
    write: { deduct: 40 },
    plain: false,
  },
  {
    name: "deduct past a soft limit already reached, after a hold",
    limits: [{ period: "month", amount: 10, soft: true }],
    grants: [{ amount: 100 }],
    holds: [{ amount: 10 }],
    write: { deduct: 5 },
    plain: true,
  },
  {
    name: "deduct refused by a limit",
    limits: [{ period: "day", amount: 20, timeZone: "Asia/Kolkata" }],
    grants: [{ amount: 100 }],
    write: { deduct: 20.000001 },
    plain: false,
  },
  {
    name: "deduct reaching a soft limit, with a key",
    limits: [{ period: "week", amount: 30, soft: true }],
    grants: [{ amount: 100 }],
    write: { deduct: 30 },
    key: true,
    plain: false,
  },
  // SQLite tests the hard limits at once (held + needed < the least of amount − spent) and
  // each soft limit by itself.
  {
    name: "deduct under two hard limits and a soft one reached, after a hold",
    limits: [
      { period: "day", amount: 50 },
      { period: "hour", amount: 45, timeZone: "Asia/Kolkata" },
      { period: "month", amount: 10, soft: true },
    ],
    grants: [{ amount: 100 }],
    holds: [{ amount: 10 }],
    write: { deduct: 34.999999 },
    plain: true,
  },
  {
    name: "deduct under two limits of one window (one counter)",
    limits: [
      { period: "day", amount: 100, timeZone: "Asia/Kolkata" },
      { period: "day", amount: 200, timeZone: "Asia/Kolkata" },
    ],
    grants: [{ amount: 100 }],
    write: { deduct: 30 },
    plain: true,
  },
  {
    name: "deduct reaching the tighter of two hard limits, after a hold",
    limits: [
      { period: "day", amount: 100 },
      { period: "hour", amount: 45, timeZone: "Asia/Kolkata" },
    ],
    grants: [{ amount: 100 }],
    holds: [{ amount: 10 }],
    write: { deduct: 35 },
    plain: false,
  },
  {
    name: "deduct passing a soft limit under a hard one",
    limits: [
      { period: "day", amount: 100 },
      { period: "week", amount: 20, soft: true },
    ],
    grants: [{ amount: 100 }],
    write: { deduct: 25 },
    plain: false,
  },
  {
    name: "manual debit refused by a limit counting holds",
    limits: [{ period: "month", amount: 50 }],
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }],
    write: { manual: 11 },
    plain: false,
  },
  {
    name: "confirm less than the hold under a limit",
    limits: THREE_LIMITS,
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }],
    write: { confirm: 25 },
    plain: false,
  },
  {
    name: "confirm more than the hold, refused by a limit",
    limits: [{ period: "hour", amount: 50 }],
    grants: [{ amount: 100 }],
    holds: [{ amount: 40 }],
    write: { confirm: 55 },
    plain: false,
  },
  {
    name: "reserve reaching a limit",
    limits: [{ period: "day", amount: 30, timeZone: "America/New_York" }],
    grants: [{ amount: 100 }],
    write: { reserve: 30 },
    plain: false,
  },
  {
    name: "reserve refused by a limit",
    limits: [{ period: "day", amount: 30 }],
    grants: [{ amount: 100 }],
    write: { reserve: 31 },
    plain: false,
  },
  // Boundaries of `available` (src/accounts/plain.ts, ledger_plain_fits, ledger_plain_reserve):
  // what is needed exactly, one micro-credit beyond it, one under it.
  ...[60, 60.000001, 59.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} of 60 available after a hold`,
      grants: [{ amount: 100 }],
      holds: [{ amount: 40 }],
      write: { deduct },
      plain: deduct <= 60,
    }),
  ),
  ...[30, 30.000001, 29.999999].map(
    (manual): Case => ({
      name: `manual debit of ${manual} of 30 available after spending`,
      grants: [{ amount: 70 }],
      spend: [25],
      holds: [{ amount: 15 }],
      write: { manual },
      plain: manual <= 30,
    }),
  ),
  ...[60, 60.000001, 59.999999].map(
    (reserve): Case => ({
      name: `reserve ${reserve} of 60 available`,
      grants: [{ amount: 100 }],
      holds: [{ amount: 40 }],
      write: { reserve },
      plain: reserve <= 60,
    }),
  ),
  ...[70, 70.000001, 69.999999].map(
    (confirm): Case => ({
      name: `confirm ${confirm} of a hold of 40 with 30 more available`,
      grants: [{ amount: 100 }],
      holds: [{ amount: 40 }, { amount: 30 }],
      write: { confirm },
      plain: confirm <= 70,
    }),
  ),
  // The first grant in spending order covering the debit: its remaining exactly, one
  // micro-credit short (the debit then spans two grants), one over.
  ...[30, 30.000001, 29.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} from a first grant with 30 remaining`,
      grants: [
        { amount: 50, priority: 10 },
        { amount: 50, priority: 60 },
      ],
      spend: [20],
      write: { deduct },
      plain: deduct <= 30,
    }),
  ),
  ...[40, 40.000001].map(
    (confirm): Case => ({
      name: `confirm ${confirm} of a hold of 40 on a first grant of 40`,
      grants: [
        { amount: 40, priority: 10 },
        { amount: 60, priority: 60 },
      ],
      holds: [{ amount: 40 }],
      write: { confirm },
      plain: confirm <= 40,
    }),
  ),
  // The low-balance threshold: landing on it, one micro-credit above and below it; standing on
  // it, one micro-credit above and below it, before the write.
  ...[60.000001, 59.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} from 100 over a threshold of 40`,
      threshold: 40,
      grants: [{ amount: 100 }],
      write: { deduct },
      plain: deduct <= 60,
    }),
  ),
  ...[
    { spend: 50, deduct: 10, plain: false },
    { spend: 50, deduct: 0.000001, plain: false },
    { spend: 49.999999, deduct: 0.000001, plain: true },
    { spend: 49.999999, deduct: 0.000002, plain: false },
    { spend: 50.000001, deduct: 10, plain: true },
  ].map(
    ({ spend, deduct, plain }): Case => ({
      name: `deduct ${deduct} standing at ${100 - spend} over a threshold of 50`,
      threshold: 50,
      grants: [{ amount: 100 }],
      spend: [spend],
      write: { deduct },
      plain,
    }),
  ),
  {
    name: "manual debit standing exactly at the threshold",
    threshold: 50,
    grants: [{ amount: 100 }],
    spend: [50],
    write: { manual: 1 },
    plain: false,
  },
  ...[30, 30.000001, 29.999999].map(
    (reserve): Case => ({
      name: `reserve ${reserve} of 100 over a threshold of 70`,
      threshold: 70,
      grants: [{ amount: 100 }],
      write: { reserve },
      plain: reserve <= 30,
    }),
  ),
  {
    name: "reserve standing exactly at the threshold",
    threshold: 50,
    grants: [{ amount: 100 }],
    spend: [50],
    write: { reserve: 5 },
    plain: false,
  },
  ...[45, 40, 40.000001].map(
    (confirm): Case => ({
      name: `confirm ${confirm} of a hold of 40, standing exactly at the threshold`,
      threshold: 60,
      grants: [{ amount: 100 }],
      holds: [{ amount: 40 }],
      write: { confirm },
      plain: confirm <= 40,
    }),
  ),
  // Limits whose windows have already spent (earlier deductions) and hold (a hold): spent +
  // held + amount exactly at the limit, one micro-credit over it, one under it (the limited plain
  // debit: src/limits/plain.ts `underLimits`, ledger_plain_limited_debit).
  ...[20, 20.000001, 19.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} under an hour limit of 50 with 20 spent and 10 held`,
      limits: [{ period: "hour", amount: 50 }],
      grants: [{ amount: 100 }],
      spend: [20],
      holds: [{ amount: 10 }],
      write: { deduct },
      plain: deduct < 20,
    }),
  ),
  // A debit of one micro-credit: reaching an hour limit of 50 from one micro-credit under it,
  // and passing it from exactly at it (spent + held = amount).
  ...[39.999999, 40].map(
    (spent): Case => ({
      name: `deduct 0.000001 under an hour limit of 50 with ${spent} spent and 10 held`,
      limits: [{ period: "hour", amount: 50 }],
      grants: [{ amount: 100 }],
      spend: [spent],
      holds: [{ amount: 10 }],
      write: { deduct: 0.000001 },
      plain: false,
    }),
  ),
  ...[20, 20.000001, 19.999999].map(
    (manual): Case => ({
      name: `manual debit of ${manual} under a soft day limit of 50 with 20 spent and 10 held`,
      limits: [
        { period: "day", amount: 50, timeZone: "Asia/Kolkata", soft: true },
        { period: "month", amount: 1000 },
      ],
      grants: [{ amount: 100 }],
      spend: [20],
      holds: [{ amount: 10 }],
      write: { manual },
      plain: manual < 20,
    }),
  ),
  ...[30, 30.000001, 29.999999].map(
    (soft): Case => ({
      name: `deduct past a soft limit of ${soft} with 20 spent and 10 held`,
      limits: [
        { period: "week", amount: soft, soft: true },
        { period: "day", amount: 1000 },
      ],
      grants: [{ amount: 100 }],
      spend: [20],
      holds: [{ amount: 10 }],
      write: { deduct: 5 },
      plain: soft <= 30,
    }),
  ),
  ...[15, 15.000001, 14.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} under the tighter of two hard limits with 20 spent and 10 held`,
      limits: [
        { period: "day", amount: 100 },
        { period: "hour", amount: 45, timeZone: "Asia/Kolkata" },
        { period: "month", amount: 10, soft: true },
      ],
      grants: [{ amount: 100 }],
      spend: [20],
      holds: [{ amount: 10 }],
      write: { deduct },
      plain: deduct < 15,
    }),
  ),
  // Limits changed between two writes: by this process, then by another (this one still knows
  // the limits before: the stored ones decide).
  ...[20, 19.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} after this process lowered an hour limit to 50, 30 spent`,
      limits: [{ period: "hour", amount: 100 }],
      grants: [{ amount: 100 }],
      spend: [30],
      setLimits: { limits: [{ period: "hour", amount: 50 }] },
      write: { deduct },
      plain: deduct < 20,
    }),
  ),
  ...[25, 19.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} after another process lowered an hour limit to 50, 30 spent`,
      limits: [{ period: "hour", amount: 100 }],
      grants: [{ amount: 100 }],
      spend: [30],
      setLimits: { limits: [{ period: "hour", amount: 50 }], stale: true },
      write: { deduct },
      // The statement reads the stored limits: the guess of the old ones costs a second try.
      plain: deduct < 20,
    }),
  ),
  ...[25, 19].map(
    (deduct): Case => ({
      name: `deduct ${deduct} after another process set a limit, 30 spent`,
      grants: [{ amount: 100 }],
      spend: [30],
      setLimits: { limits: [{ period: "day", amount: 50 }], stale: true },
      write: { deduct },
      plain: deduct < 20,
    }),
  ),
  {
    name: "deduct after another process removed the limits, 30 spent",
    limits: [{ period: "hour", amount: 50 }],
    grants: [{ amount: 100 }],
    spend: [30],
    setLimits: { limits: null, stale: true },
    write: { deduct: 25 },
    plain: true,
  },
  // The clock moves with limits set: a window ends between the earlier spending and the write.
  ...[0, -1].map(
    (plusMs): Case => ({
      name: `deduct 40 at ${plusMs} ms from the next hour, 40 spent of an hour limit of 50`,
      limits: [{ period: "hour", amount: 50 }],
      grants: [{ amount: 100 }],
      spend: [40],
      moveTo: { everyMs: HOUR, plusMs },
      write: { deduct: 40 },
      plain: plusMs === 0,
    }),
  ),
  ...[30, 29.999999].map(
    (deduct): Case => ({
      name: `deduct ${deduct} in the next hour, 30 spent of a day limit of 60 and an hour limit of 40`,
      limits: [
        { period: "hour", amount: 40 },
        { period: "day", amount: 60 },
      ],
      grants: [{ amount: 100 }],
      spend: [30],
      moveTo: { everyMs: HOUR, plusMs: 1 },
      write: { deduct },
      plain: deduct < 30,
    }),
  ),
  // Another process whose clock is ahead moved the account last: on PostgreSQL the debit is
  // booked at that later time (never before the account's last move), which must lie in each
  // window the plain debit was given.
  ...[0, -1].map(
    (plusMs): Case => ({
      name: `deduct 5 after another process added credits at ${plusMs} ms from the next hour`,
      limits: [{ period: "hour", amount: 50 }],
      grants: [{ amount: 100 }],
      spend: [40],
      creditAhead: { amount: 10, at: { everyMs: HOUR, plusMs } },
      write: { deduct: 5 },
      plain: { sqlite: true, postgres: plusMs < 0 },
    }),
  ),
  {
    name: "deduct at the start of a Kolkata day, 40 spent of a day limit of 50 there",
    limits: [{ period: "day", amount: 50, timeZone: "Asia/Kolkata" }],
    grants: [{ amount: 100 }],
    spend: [40],
    moveTo: { everyMs: DAY, offsetMs: -KOLKATA_OFFSET_MS },
    write: { deduct: 40 },
    plain: true,
  },
];

/** A side's POST that keeps every answer in `answers`. */
type Call = (
  path: string,
  body: unknown,
  key?: string,
) => Promise<{ account?: { id: string }; reservation?: { id: string } }>;

/** Runs `c` on one side. @returns every answer, and how many writes the plain path made of the last */
async function runCase(s: Side, c: Case, n: number) {
  const answers: unknown[] = [];
  const ext = `eq-${n}`;
  const call: Call = async (path, body, key) => {
    const answer = await post(s, path, body, key);
    answers.push(answer);
    return answer.body as { account?: { id: string }; reservation?: { id: string } };
  };
  const { accountId, holds } = await setUp(s, c, ext, call);
  s.count.made = 0;
  const [path, body] =
    "deduct" in c.write
      ? ["/v1/accounts/credits/deduct", { accountId, amount: c.write.deduct, metadata: { n } }]
      : "manual" in c.write
        ? ["/v1/transactions/create", { accountId, type: "debit", amount: c.write.manual }]
        : "confirm" in c.write
          ? ["/v1/reservations/confirm", { reservationId: holds[0], actualAmount: c.write.confirm }]
          : ["/v1/reservations/create", { accountId, amount: c.write.reserve, model: "m" }];
  const key = c.key ? `key-${n}` : undefined;
  await call(path, body, key);
  const plainMade = s.count.made;
  if (key !== undefined) await call(path, body, key);
  return { answers, plainMade, stored: await stored(s.t, ext) };
}

/**
 * Everything of `c` before its write, on one side: the account `ext`, its grants, earlier
 * spending, holds, clock moves, limits changed, another process's credit.
 * @returns how the write names the account, and the holds' ids
 */
async function setUp(s: Side, c: Case, ext: string, call: Call) {
  const created = await call("/v1/accounts/create", {
    externalId: ext,
    name: "Equivalence",
    ...(c.threshold === undefined ? {} : { lowBalanceThreshold: c.threshold }),
    ...(c.limits === undefined ? {} : { spendLimits: c.limits }),
  });
  const accountId = c.byId ? (created.account?.id ?? "") : ext;
  const start = s.t.now();
  for (const g of c.grants) {
    const expiresAt =
      g.expiresInHours === undefined
        ? {}
        : { expiresAt: new Date(start + g.expiresInHours * HOUR).toISOString() };
    const priority = g.priority === undefined ? {} : { priority: g.priority };
    await call("/v1/accounts/credits/add", {
      accountId,
      amount: g.amount,
      ...priority,
      ...expiresAt,
    });
  }
  for (const amount of c.spend ?? []) {
    await call("/v1/accounts/credits/deduct", { accountId, amount });
  }
  const holds: string[] = [];
  for (const h of c.holds ?? []) {
    const made = await call("/v1/reservations/create", { accountId, ...h });
    holds.push(made.reservation?.id ?? "none");
  }
  if (c.before0008) await withoutConfirmText(s.t, holds[0] ?? "none");
  s.t.advance((c.advanceHours ?? 0) * HOUR);
  if (c.moveTo) s.t.setNow(nextBoundary(s.t.now(), c.moveTo));
  if (c.setLimits) await setLimits(s, ext, c.setLimits, call);
  if (c.creditAhead) {
    const own = s.t.now();
    s.t.setNow(nextBoundary(own, c.creditAhead.at));
    await call("/v1/accounts/credits/add", { accountId, amount: c.creditAhead.amount });
    s.t.setNow(own);
  }
  return { accountId, holds };
}

/**
 * Replaces the limits of the account `ext` (`POST /v1/accounts/update`). `stale`: as another
 * process would. Either way the write path's guess of the account's limits
 * (src/db/seen-limits.ts) is still the text it read before, which only its plain paths learn:
 * the next debit finds the stored text in its own statement and tries again with it.
 */
async function setLimits(
  _s: Side,
  ext: string,
  change: NonNullable<Case["setLimits"]>,
  call: Call,
) {
  await call("/v1/accounts/update", { accountId: ext, spendLimits: change.limits });
}

/** Removes the confirm's text stored with the hold `id`, as a hold made before migration 0008. */
async function withoutConfirmText(t: TestLedger, id: string) {
  const removed = await t.ledger.db.write
    .updateTable("reservations")
    .set({ confirm_description: null, confirm_metadata: null })
    .where("id", "=", id)
    .executeTakeFirst();
  expect(removed.numUpdatedRows).toBe(1n);
}

/**
 * What the side's database holds of the account `externalId`: the account, its ledger, its
 * grants, its holds and the events about it.
 */
async function stored(t: TestLedger, externalId: string) {
  const db = t.ledger.db.read;
  const account = await db
    .selectFrom("accounts")
    .selectAll()
    .where("external_id", "=", externalId)
    .executeTakeFirstOrThrow();
  const events = await db
    .selectFrom("webhook_events")
    .select(["id", "type", "payload", "created_at_ms"])
    .orderBy("id")
    .execute();
  return {
    account,
    transactions: await db
      .selectFrom("transactions")
      .selectAll()
      .where("account_id", "=", account.id)
      .orderBy("seq")
      .execute(),
    grants: await db
      .selectFrom("credit_grants as g")
      .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq")
      .selectAll("g")
      .select("r.remaining_micros")
      .where("g.account_id", "=", account.id)
      .orderBy("g.seq")
      .execute(),
    reservations: await db
      .selectFrom("reservations")
      .selectAll()
      .where("account_id", "=", account.id)
      .orderBy("id")
      .execute(),
    events: events.filter((e) => e.payload.includes(`"${account.id}"`)),
  };
}

describe(`one debit rule, plain path against general path (${TEST_ENGINE})`, () => {
  let plain: Side;
  let general: Side;
  beforeAll(async () => {
    [plain, general] = await twoSides();
  });
  afterAll(async () => {
    await Promise.all([plain?.t.close(), general?.t.close()]);
  });

  it.each(CASES.map((c, n) => [c.name, c, n] as const))("%s", async (_name, c, n) => {
    // The two ledgers share nothing but the process: each runs the case on its own database.
    const [viaPlain, viaGeneral] = await Promise.all([
      runCase(plain, c, n),
      runCase(general, c, n),
    ]);
    expect(canonical(viaPlain.answers)).toEqual(canonical(viaGeneral.answers));
    expect(canonical(viaPlain.stored)).toEqual(canonical(viaGeneral.stored));
    expect(viaGeneral.plainMade).toBe(0);
    const plainHere = plainOn(c.plain, TEST_ENGINE);
    expect(viaPlain.plainMade, "the plain path made the write").toBe(plainHere ? 1 : 0);
    expect(await plain.t.verify()).toEqual([]);
  });

  it("a hold made before migration 0008 is confirmed with the text a hold stores now", async () => {
    const ext = "eq-before-0008";
    await post(plain, "/v1/accounts/create", { externalId: ext, name: "Before 0008" });
    await post(plain, "/v1/accounts/credits/add", { accountId: ext, amount: 100 });
    const hold = { accountId: ext, amount: 12.5, model: "m", metadata: { a: [1, 2.5] } };
    const made = await post(plain, "/v1/reservations/create", hold);
    const id = (made.body as { reservation: { id: string } }).reservation.id;
    const db = plain.t.ledger.db.read;
    const text = await db
      .selectFrom("reservations")
      .select(["confirm_description", "confirm_metadata"])
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(text.confirm_metadata).toBe(
      `{"a":[1,2.5],"model":"m","reservationId":"${id}","reservedAmount":12.5}`,
    );
    await withoutConfirmText(plain.t, id);
    plain.count.made = 0;
    const confirm = { reservationId: id, actualAmount: 10 };
    expect((await post(plain, "/v1/reservations/confirm", confirm)).status).toBe(200);
    expect(plain.count.made, "no stored text: the general path").toBe(0);
    const entry = await db
      .selectFrom("transactions")
      .select(["description", "metadata"])
      .where("reservation_id", "=", id)
      .executeTakeFirstOrThrow();
    expect(entry).toEqual({
      description: text.confirm_description,
      metadata: text.confirm_metadata,
    });
  });

  it.runIf(TEST_ENGINE === "postgres")(
    "the plain debits (ledger_plain_state, ledger_plain_member_debit) draw grants in the order of grants.ts",
    async () => {
      const db = plain.t.ledger.db.write;
      const order = sql`${spendingOrder("g")}`.compile(db).sql;
      const source = async (name: string) => {
        const { rows } = await sql<{ prosrc: string }>`
          SELECT prosrc FROM pg_proc WHERE proname = ${name}`.execute(db);
        return normal(rows[0]?.prosrc ?? "");
      };
      const normal = (text: string) => text.replaceAll('"', "").replace(/\s+/g, " ").toLowerCase();
      expect(await source("ledger_first_grant")).toContain(`order by ${normal(order)} limit 1`);
      for (const caller of ["ledger_plain_state", "ledger_plain_member_debit"]) {
        expect(await source(caller)).toContain("from ledger_first_grant(");
      }
    },
  );
});

/**
 * The one rule (src/admission/rule.ts) as both paths take it, against the rule as docs/api.md
 * states it in words, on every boundary: a comparison changed in the rule changes both paths
 * alike, which the table above cannot see, and fails here on every engine.
 */
describe(`the one rule against its documented form (${TEST_ENGINE})`, () => {
  const around = (n: number) => [n - 1, n, n + 1];
  it("credits, the low-balance threshold and the first grant", () => {
    for (const available of [99, 100, 101])
      for (const needed of [0, 1, 100])
        for (const drawn of [0, needed])
          for (const first of [null, ...around(needed)])
            for (const threshold of [null, ...around(available - needed), ...around(available)]) {
              const after = available - needed;
              const documented =
                available >= needed &&
                !(threshold !== null && available >= threshold && after < threshold) &&
                (drawn === 0 || (first !== null && first >= drawn));
              const terms = {
                region: true,
                available,
                needed,
                drawn,
                firstRemaining: first,
                threshold,
              };
              expect(plainDebit(numbers, terms), JSON.stringify(terms)).toBe(documented);
              expect(covers(numbers, available, needed)).toBe(available >= needed);
              expect(crosses(numbers, threshold, available, after)).toBe(
                threshold !== null && available >= threshold && after < threshold,
              );
            }
  });
  it("a spend limit: refused past its amount, reached at it", () => {
    for (const spent of [0, 39, 40, 98, 99, 100, 101])
      for (const held of [0, 1])
        for (const needed of [0, 1, 2])
          for (const soft of [false, true]) {
            const l = { spent, held, needed, amount: 100 };
            const before = spent + held;
            const passes = needed > 0 && before + needed > 100;
            const reaches = needed > 0 && before < 100 && before + needed >= 100;
            expect(passesLimit(numbers, l), JSON.stringify(l)).toBe(passes);
            expect(reachesLimit(numbers, l), JSON.stringify(l)).toBe(reaches);
            expect(plainLimit(numbers, l, soft)).toBe(!reaches && (soft || !passes));
          }
  });
});
