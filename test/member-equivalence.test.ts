/**
 * One debit rule for accounts inside accounts (docs/api.md#pools-and-members,
 * docs/design.md#pools-and-members): a table of trees, each built through the API on two ledgers,
 * one whose write path tries each write's plain form first (counting the writes it made) and
 * one whose write path takes the general path only (test/equivalence-kit.ts); then one debit by
 * an account of the tree, compared: the HTTP answers, and everything stored of every account of
 * the tree (its rows with their counters, every transaction booked on it or on its behalf, the
 * grants with what remains, the debits' draws, the holds, the `spend_levels` rows, the limits'
 * reached windows, the events naming any of them).
 *
 * The member plain region: a deduction or manual debit (no hold) by an account in a tree whose
 * pool (the first account on the path up that funds itself) has no automatic top-up, no grant
 * expiry due or held, an `available` (less every hold it backs) that covers the debit without
 * crossing its low-balance threshold, and a first grant in spending order that covers it; and
 * at every level of the path, no limit refused nor reached (spent in the window by the whole
 * subtree + its pending holds + the debit). Each case says whether its debit lies in it, and
 * checks the answer and the events it expects, so that the table is known to reach each bound
 * as it means to.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type Answer,
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

/** An account of a case's tree, created in the table's order (parents first). */
interface Node {
  /** The account's name in the case; its externalId is `mq<case>-<name>`. */
  name: string;
  /** The parent's name; none: a root. */
  parent?: string;
  /** Who pays (default: `parent` under a parent, `own` for a root). */
  funding?: "own" | "parent";
  /** Its low-balance threshold, credits (only an account that funds itself may have one). */
  threshold?: number;
  /** Its spend limits, set when it is created. */
  limits?: Limit[];
}

/** A change made through `POST /v1/accounts/update` just before the write. */
type Change = { of: string; spendLimits: Limit[] | null } | { of: string; parentId: string };

/** What the compared write answers when it is refused: the code and the level it names. */
interface Refusal {
  code: "SPEND_LIMIT_EXCEEDED" | "INSUFFICIENT_CREDITS";
  /** The account `details` name: the level whose limit refused, or the pool. */
  names: string;
}

interface Case {
  name: string;
  tree: Node[];
  /** Credits added to accounts that fund themselves: amount, priority, hours until expiry. */
  grants: { to: string; amount: number; priority?: number; expiresInHours?: number }[];
  /** Deductions made after the grants: what the windows have already spent. */
  spend?: { by: string; amount: number }[];
  /** Holds made after the spending. */
  holds?: { by: string; amount: number; ttlSeconds?: number }[];
  /** Hours the clock moves after the holds. */
  advanceHours?: number;
  /** Where the clock moves then (a window's start or end). */
  moveTo?: Boundary;
  /** Limits replaced and accounts moved, after the clock moves, just before the write. */
  changes?: Change[];
  /** The write compared, by the account named `by`: a deduction or a manual debit. */
  write: { by: string } & ({ deduct: number } | { manual: number });
  /** Send the write with an Idempotency-Key (and send it twice). */
  key?: boolean;
  /** Name the spender by its internal id rather than its externalId. */
  byId?: boolean;
  /** The write's refusal; none: it succeeds. */
  refused?: Refusal;
  /** The events the write fires, `type:account`, in order. */
  events?: string[];
  /** Whether the write is plain (made by the plain path on the served ledger), per engine. */
  plain: PlainExpected;
}

/** A pool (a root) and its member `m`, each with limits (none when undefined). */
function poolAndMember(poolLimits?: Limit[], memberLimits?: Limit[]): Node[] {
  return [
    { name: "pool", ...(poolLimits ? { limits: poolLimits } : {}) },
    { name: "m", parent: "pool", ...(memberLimits ? { limits: memberLimits } : {}) },
  ];
}

/** A pool, its members `m` and `m2` (a sibling), each with limits (none when undefined). */
function poolAndSiblings(poolLimits?: Limit[], memberLimits?: Limit[], threshold?: number): Node[] {
  return [
    {
      name: "pool",
      ...(poolLimits ? { limits: poolLimits } : {}),
      ...(threshold === undefined ? {} : { threshold }),
    },
    { name: "m", parent: "pool", ...(memberLimits ? { limits: memberLimits } : {}) },
    { name: "m2", parent: "pool" },
  ];
}

/**
 * Three levels: `root` funding itself, `team` under it, and the team's members `m` and `m2`;
 * and `team2` under the root with its member `n`. `teamOwn`: the team funds itself.
 */
function threeLevels(
  limits: { root?: Limit[]; team?: Limit[]; m?: Limit[] },
  teamOwn = false,
): Node[] {
  return [
    { name: "root", ...(limits.root ? { limits: limits.root } : {}) },
    {
      name: "team",
      parent: "root",
      ...(teamOwn ? { funding: "own" } : {}),
      ...(limits.team ? { limits: limits.team } : {}),
    },
    { name: "m", parent: "team", ...(limits.m ? { limits: limits.m } : {}) },
    { name: "m2", parent: "team" },
    { name: "team2", parent: "root" },
    { name: "n", parent: "team2" },
  ];
}

/** An hour limit of `amount` credits (UTC), soft when `soft`. */
const hour = (amount: number, soft?: boolean): Limit => ({
  period: "hour",
  amount,
  ...(soft ? { soft } : {}),
});
/** A day limit of `amount` credits (UTC), soft when `soft`. */
const day = (amount: number, soft?: boolean): Limit => ({
  period: "day",
  amount,
  ...(soft ? { soft } : {}),
});

/** Limits at both levels that the two-level cases do not reach. */
const FAR = { pool: [day(1000), { period: "month", amount: 5000 }], m: [hour(100)] };

const CASES: Case[] = [
  // Under every limit, with credits to spare: the member's debit is plain, however it is named
  // and made.
  {
    name: "member deduct under both levels' limits",
    tree: poolAndMember(FAR.pool, FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    write: { by: "m", deduct: 30 },
    plain: true,
  },
  {
    name: "member deduct under both levels' limits, by internal id",
    tree: poolAndMember(FAR.pool, FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    write: { by: "m", deduct: 30 },
    byId: true,
    plain: true,
  },
  {
    name: "member manual debit under both levels' limits",
    tree: poolAndMember(FAR.pool, FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    write: { by: "m", manual: 30 },
    plain: true,
  },
  {
    name: "member deduct under both levels' limits, with an Idempotency-Key sent twice",
    tree: poolAndMember(FAR.pool, FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    write: { by: "m", deduct: 30 },
    key: true,
    plain: true,
  },
  {
    name: "member manual debit by internal id, with an Idempotency-Key sent twice",
    tree: poolAndMember(FAR.pool, FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 10 }],
    write: { by: "m", manual: 30 },
    key: true,
    byId: true,
    plain: true,
  },
  {
    name: "member deduct in a pool without limits, the member without limits",
    tree: poolAndMember(),
    grants: [{ to: "pool", amount: 100 }],
    write: { by: "m", deduct: 100 },
    plain: true,
  },
  // The member's own limit: one micro-credit under it, reaching it exactly (with and without a
  // key), refusing.
  ...[29.999999, 30].map(
    (deduct): Case => ({
      name: `member deduct ${deduct} with 20 spent of its own hour limit of 50`,
      tree: poolAndMember(FAR.pool, [hour(50)]),
      grants: [{ to: "pool", amount: 500 }],
      spend: [{ by: "m", amount: 20 }],
      write: { by: "m", deduct },
      ...(deduct < 30 ? {} : { events: ["spend_limit.reached:m"] }),
      plain: deduct < 30,
    }),
  ),
  {
    name: "member deduct reaching its own hour limit exactly, with an Idempotency-Key",
    tree: poolAndMember(FAR.pool, [hour(50)]),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 30 },
    key: true,
    events: ["spend_limit.reached:m"],
    plain: false,
  },
  {
    name: "member deduct refused by its own hour limit",
    tree: poolAndMember(FAR.pool, [hour(50)]),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 30.000001 },
    refused: { code: "SPEND_LIMIT_EXCEEDED", names: "m" },
    plain: false,
  },
  // The pool's limit, counting the member's spending.
  ...[19.999999, 20].map(
    (deduct): Case => ({
      name: `member deduct ${deduct} with 20 spent of the pool's day limit of 40`,
      tree: poolAndMember([day(40)], FAR.m),
      grants: [{ to: "pool", amount: 500 }],
      spend: [{ by: "m", amount: 20 }],
      write: { by: "m", deduct },
      ...(deduct < 20 ? {} : { events: ["spend_limit.reached:pool"] }),
      plain: deduct < 20,
    }),
  ),
  {
    name: "member deduct refused by the pool's hard limit",
    tree: poolAndMember([day(40)], FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 25 },
    refused: { code: "SPEND_LIMIT_EXCEEDED", names: "pool" },
    plain: false,
  },
  {
    name: "member manual debit refused by the pool's hard limit, with a key",
    tree: poolAndMember([day(40)], FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 20 }],
    write: { by: "m", manual: 20.000001 },
    key: true,
    refused: { code: "SPEND_LIMIT_EXCEEDED", names: "pool" },
    plain: false,
  },
  // The member's own pending hold counts at both levels.
  {
    name: "member's own hold + deduct still below both levels' limits",
    tree: poolAndMember([day(100)], [hour(50)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 29.999999 },
    plain: true,
  },
  {
    name: "member's own hold + deduct reaching the member's limit",
    tree: poolAndMember([day(100)], [hour(50)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 30 },
    events: ["spend_limit.reached:m"],
    plain: false,
  },
  {
    name: "member's own hold + deduct reaching the pool's limit",
    tree: poolAndMember([day(50)], [hour(100)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 30 },
    events: ["spend_limit.reached:pool"],
    plain: false,
  },
  {
    name: "member's own hold + deduct one micro-credit under the pool's limit",
    tree: poolAndMember([day(50)], [hour(100)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m", amount: 20 }],
    write: { by: "m", deduct: 29.999999 },
    plain: true,
  },
  // A sibling's hold counts at the pool's level, not at the member's.
  {
    name: "sibling's hold makes the pool's limit reached, the member's own limit far",
    tree: poolAndSiblings([day(50)], [hour(100)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 20 },
    events: ["spend_limit.reached:pool"],
    plain: false,
  },
  {
    name: "sibling's hold leaves the pool's limit one micro-credit short of reached",
    tree: poolAndSiblings([day(50)], [hour(100)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 19.999999 },
    plain: true,
  },
  {
    name: "sibling's hold not counted at the member's own limit",
    tree: poolAndSiblings([day(1000)], [hour(25)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 20 },
    plain: true,
  },
  {
    name: "sibling's hold past its expiry no longer counted at the pool's limit",
    tree: poolAndSiblings([day(50)], [hour(100)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m2", amount: 30, ttlSeconds: 60 }],
    advanceHours: 1,
    write: { by: "m", deduct: 20 },
    plain: true,
  },
  // The pool's credits: `available` less every hold it backs.
  {
    name: "pool credits insufficient because of a sibling's hold",
    tree: poolAndSiblings(),
    grants: [{ to: "pool", amount: 50 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 25 },
    refused: { code: "INSUFFICIENT_CREDITS", names: "pool" },
    plain: false,
  },
  {
    name: "pool credits insufficient because of the member's own hold, manual debit",
    tree: poolAndSiblings(FAR.pool, FAR.m),
    grants: [{ to: "pool", amount: 50 }],
    holds: [{ by: "m", amount: 30 }],
    write: { by: "m", manual: 20.000001 },
    refused: { code: "INSUFFICIENT_CREDITS", names: "pool" },
    plain: false,
  },
  {
    name: "member deduct of the pool's available exactly after a sibling's hold",
    tree: poolAndSiblings(),
    grants: [{ to: "pool", amount: 50 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 20 },
    plain: true,
  },
  // The pool's low-balance threshold, judged on its `available`.
  {
    name: "member deduct crossing the pool's low-balance threshold",
    tree: poolAndSiblings(undefined, undefined, 50),
    grants: [{ to: "pool", amount: 100 }],
    write: { by: "m", deduct: 60 },
    events: ["balance.low:pool"],
    plain: false,
  },
  {
    name: "member deduct crossing the pool's threshold counting a sibling's hold",
    tree: poolAndSiblings(FAR.pool, FAR.m, 50),
    grants: [{ to: "pool", amount: 100 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 20.000001 },
    events: ["balance.low:pool"],
    plain: false,
  },
  {
    name: "member deduct landing on the pool's threshold exactly after a sibling's hold",
    tree: poolAndSiblings(FAR.pool, FAR.m, 50),
    grants: [{ to: "pool", amount: 100 }],
    holds: [{ by: "m2", amount: 30 }],
    write: { by: "m", deduct: 20 },
    plain: true,
  },
  {
    name: "member deduct with the pool already below its threshold",
    tree: poolAndSiblings(FAR.pool, FAR.m, 200),
    grants: [{ to: "pool", amount: 100 }],
    write: { by: "m", deduct: 10 },
    plain: true,
  },
  // The pool's first grant in spending order.
  ...[30, 30.000001].map(
    (deduct): Case => ({
      name: `member deduct ${deduct} with the pool's first grant of 30 (priority 10) before 100`,
      tree: poolAndMember(FAR.pool, FAR.m),
      grants: [
        { to: "pool", amount: 100, priority: 60 },
        { to: "pool", amount: 30, priority: 10 },
      ],
      write: { by: "m", deduct },
      plain: deduct <= 30,
    }),
  ),
  {
    name: "member deduct with a pool grant's expiry due",
    tree: poolAndMember(FAR.pool, FAR.m),
    grants: [
      { to: "pool", amount: 50, expiresInHours: 1 },
      { to: "pool", amount: 100 },
    ],
    advanceHours: 2,
    write: { by: "m", deduct: 10 },
    events: ["credits.expired:pool"],
    plain: false,
  },
  // Three levels: a root, a team funded by it, the team's member; a limit at each.
  {
    name: "three levels, member deduct under every level's limit",
    tree: threeLevels({ root: [day(1000)], team: [day(100)], m: [hour(50)] }),
    grants: [{ to: "root", amount: 500 }],
    spend: [
      { by: "m", amount: 10 },
      { by: "m2", amount: 20 },
    ],
    holds: [{ by: "n", amount: 30 }],
    write: { by: "m", deduct: 20 },
    plain: true,
  },
  {
    name: "three levels, member deduct reaching the team's limit",
    tree: threeLevels({ root: [day(1000)], team: [day(100)], m: [hour(50)] }),
    grants: [{ to: "root", amount: 500 }],
    spend: [{ by: "m2", amount: 60 }],
    write: { by: "m", deduct: 40 },
    events: ["spend_limit.reached:team"],
    plain: false,
  },
  {
    name: "three levels, member deduct refused by the team's hard limit",
    tree: threeLevels({ root: [day(1000)], team: [day(100)], m: [hour(50)] }),
    grants: [{ to: "root", amount: 500 }],
    spend: [{ by: "m2", amount: 70 }],
    write: { by: "m", deduct: 40 },
    refused: { code: "SPEND_LIMIT_EXCEEDED", names: "team" },
    plain: false,
  },
  ...[39.999999, 40].map(
    (deduct): Case => ({
      name: `three levels, member deduct ${deduct} against the root's limit of 100 with 60 held in another team`,
      tree: threeLevels({ root: [day(100)], team: [day(1000)], m: [hour(1000)] }),
      grants: [{ to: "root", amount: 500 }],
      holds: [{ by: "n", amount: 60 }],
      write: { by: "m", deduct },
      ...(deduct < 40 ? {} : { events: ["spend_limit.reached:root"] }),
      plain: deduct < 40,
    }),
  ),
  {
    name: "three levels, the team funding itself: its member draws on it, not on the root",
    tree: threeLevels({ root: [day(1000)], team: [day(100)], m: [hour(50)] }, true),
    grants: [
      { to: "root", amount: 100 },
      { to: "team", amount: 40 },
    ],
    holds: [{ by: "n", amount: 90 }],
    write: { by: "m", deduct: 40 },
    plain: true,
  },
  {
    name: "four levels, the deepest member deduct under a limit at every level",
    tree: [
      { name: "root", limits: [day(1000)] },
      { name: "a", parent: "root", limits: [day(500)] },
      { name: "b", parent: "a", limits: [hour(200)] },
      { name: "m", parent: "b", limits: [hour(100)] },
    ],
    grants: [{ to: "root", amount: 500 }],
    spend: [{ by: "b", amount: 50 }],
    holds: [{ by: "a", amount: 50 }],
    write: { by: "m", deduct: 49.999999 },
    plain: true,
  },
  {
    name: "four levels, the deepest member deduct reaching the middle level's limit",
    tree: [
      { name: "root", limits: [day(1000)] },
      { name: "a", parent: "root", limits: [day(500)] },
      { name: "b", parent: "a", limits: [hour(100)] },
      { name: "m", parent: "b", limits: [hour(100)] },
    ],
    grants: [{ to: "root", amount: 500 }],
    spend: [{ by: "b", amount: 50 }],
    holds: [{ by: "a", amount: 50 }],
    write: { by: "m", deduct: 50 },
    events: ["spend_limit.reached:b"],
    plain: false,
  },
  // An account funding itself under a parent: its own pool, its parent's limits still count.
  {
    name: "member funding itself under a parent with limits, under them",
    tree: [
      { name: "pool", limits: [day(100)] },
      { name: "m", parent: "pool", funding: "own", limits: [hour(50)] },
    ],
    grants: [
      { to: "pool", amount: 100 },
      { to: "m", amount: 100 },
    ],
    spend: [{ by: "m", amount: 10 }],
    write: { by: "m", deduct: 20 },
    plain: true,
  },
  {
    name: "member funding itself under a parent, reaching the parent's limit",
    tree: [
      { name: "pool", limits: [day(30)] },
      { name: "m", parent: "pool", funding: "own", limits: [hour(50)] },
    ],
    grants: [{ to: "m", amount: 100 }],
    spend: [{ by: "m", amount: 10 }],
    write: { by: "m", deduct: 20 },
    events: ["spend_limit.reached:pool"],
    plain: false,
  },
  // The pool itself, a root with children, spending: its limit counts its children's holds.
  {
    name: "pool deducting for itself, its limit counting a child's hold, under it",
    tree: poolAndMember([day(100)], [hour(50)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m", amount: 30 }],
    write: { by: "pool", deduct: 20 },
    plain: true,
  },
  {
    name: "pool deducting for itself, its limit reached counting a child's hold",
    tree: poolAndMember([day(50)], [hour(50)]),
    grants: [{ to: "pool", amount: 500 }],
    holds: [{ by: "m", amount: 30 }],
    write: { by: "pool", deduct: 20 },
    events: ["spend_limit.reached:pool"],
    plain: false,
  },
  {
    name: "pool's own manual debit beyond its available after a child's hold",
    tree: poolAndMember(),
    grants: [{ to: "pool", amount: 50 }],
    holds: [{ by: "m", amount: 30 }],
    write: { by: "pool", manual: 20.000001 },
    refused: { code: "INSUFFICIENT_CREDITS", names: "pool" },
    plain: false,
  },
  // Soft limits at the pool.
  {
    name: "member deduct with the pool's soft limit already past its amount",
    tree: poolAndMember([day(10, true), day(1000)], FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 15 }],
    write: { by: "m", deduct: 5 },
    plain: true,
  },
  {
    name: "member deduct reaching the pool's soft limit",
    tree: poolAndMember([day(30, true)], FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 15 }],
    write: { by: "m", deduct: 15 },
    events: ["spend_limit.reached:pool"],
    plain: false,
  },
  // Limits changed between a first member debit (which gives the write path its guess of the
  // path's limits) and the compared one.
  ...[19.999999, 20].map(
    (deduct): Case => ({
      name: `member deduct ${deduct} after the pool's hour limit was lowered to 50, 30 spent`,
      tree: poolAndMember([hour(100)], [day(1000)]),
      grants: [{ to: "pool", amount: 500 }],
      spend: [{ by: "m", amount: 30 }],
      changes: [{ of: "pool", spendLimits: [hour(50)] }],
      write: { by: "m", deduct },
      ...(deduct < 20 ? {} : { events: ["spend_limit.reached:pool"] }),
      plain: deduct < 20,
    }),
  ),
  ...[19, 20].map(
    (deduct): Case => ({
      name: `member deduct ${deduct} after a day limit of 50 was set on a pool without limits, 30 spent`,
      tree: poolAndMember(undefined, FAR.m),
      grants: [{ to: "pool", amount: 500 }],
      spend: [{ by: "m", amount: 30 }],
      changes: [{ of: "pool", spendLimits: [day(50)] }],
      write: { by: "m", deduct },
      ...(deduct < 20 ? {} : { events: ["spend_limit.reached:pool"] }),
      plain: deduct < 20,
    }),
  ),
  {
    name: "member deduct after the pool's limits were removed, 30 spent of 50",
    tree: poolAndMember([hour(50)], FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 30 }],
    changes: [{ of: "pool", spendLimits: null }],
    write: { by: "m", deduct: 25 },
    plain: true,
  },
  {
    name: "member deduct after its own hour limit was lowered to 50, 30 spent",
    tree: poolAndMember(FAR.pool, [hour(100)]),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 30 }],
    changes: [{ of: "m", spendLimits: [hour(50)] }],
    write: { by: "m", deduct: 19.999999 },
    plain: true,
  },
  // A member moved to another pool between a first debit and the compared one: booked on the
  // new pool, whose limit counts no past spend.
  ...[19.999999, 20].map(
    (deduct): Case => ({
      name: `member moved to another pool with a day limit of 20, deduct ${deduct}, 10 spent before`,
      tree: [
        { name: "p1", limits: [day(1000)] },
        { name: "p2", limits: [day(20)] },
        { name: "m", parent: "p1", limits: [hour(100)] },
      ],
      grants: [
        { to: "p1", amount: 100 },
        { to: "p2", amount: 100 },
      ],
      spend: [{ by: "m", amount: 10 }],
      changes: [{ of: "m", parentId: "p2" }],
      write: { by: "m", deduct },
      ...(deduct < 20 ? {} : { events: ["spend_limit.reached:p2"] }),
      plain: deduct < 20,
    }),
  ),
  {
    name: "member moved to another pool without limits, booked on the new pool",
    tree: [
      { name: "p1", limits: [day(15)] },
      { name: "p2" },
      { name: "m", parent: "p1", limits: [hour(100)] },
    ],
    grants: [
      { to: "p1", amount: 100 },
      { to: "p2", amount: 100 },
    ],
    spend: [{ by: "m", amount: 10 }],
    changes: [{ of: "m", parentId: "p2" }],
    write: { by: "m", manual: 20 },
    plain: true,
  },
  // The windows' edges: spending in the previous hour (or day) no longer counts.
  ...[0, -1].map(
    (plusMs): Case => ({
      name: `member deduct 40 at ${plusMs} ms from the next hour, 40 spent of its hour limit of 50`,
      tree: poolAndMember(FAR.pool, [hour(50)]),
      grants: [{ to: "pool", amount: 500 }],
      spend: [{ by: "m", amount: 40 }],
      moveTo: { everyMs: HOUR, plusMs },
      write: { by: "m", deduct: 40 },
      ...(plusMs === 0 ? {} : { refused: { code: "SPEND_LIMIT_EXCEEDED", names: "m" } }),
      plain: plusMs === 0,
    }),
  ),
  {
    name: "member deduct 40 at the start of the next day, 40 spent of the pool's day limit of 50",
    tree: poolAndMember([day(50)], FAR.m),
    grants: [{ to: "pool", amount: 500 }],
    spend: [{ by: "m", amount: 40 }],
    moveTo: { everyMs: DAY },
    write: { by: "m", deduct: 40 },
    plain: true,
  },
];

/** What a run of a case on one side gave. */
interface Run {
  answers: Answer[];
  /** The writes the plain path made of the compared write (its first sending). */
  plainMade: number;
  /** The compared write's first answer. */
  answer: Answer;
  /** The events the compared write fired, `type:account`. */
  fired: string[];
  /** The account the compared write was booked on and on behalf of (names), when it succeeded. */
  booked: { on: string; onBehalfOf: string | null } | null;
  stored: Awaited<ReturnType<typeof stored>>;
}

const createdAccount = z.object({ account: z.object({ id: z.string() }) });
const eventPayload = z.object({
  type: z.string(),
  data: z.object({ accountId: z.string().optional(), externalId: z.string().optional() }),
});

/** Runs `c` (number `n`) on one side. @returns what it answered and stored */
async function runCase(s: Side, c: Case, n: number): Promise<Run> {
  const answers: Answer[] = [];
  const call = async (path: string, body: unknown, key?: string) => {
    const answer = await post(s, path, body, key);
    answers.push(answer);
    return answer;
  };
  /** A setting-up call, which must succeed. */
  const setUp = async (path: string, body: unknown) => {
    const answer = await call(path, body);
    expect(answer.status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`).toBe(
      200,
    );
    return answer;
  };
  const ext = (name: string) => `mq${n}-${name}`;
  const ids = new Map<string, string>();
  for (const node of c.tree) {
    const made = await setUp("/v1/accounts/create", {
      externalId: ext(node.name),
      name: node.name,
      ...(node.parent === undefined ? {} : { parentId: ext(node.parent) }),
      ...(node.funding === undefined ? {} : { funding: node.funding }),
      ...(node.threshold === undefined ? {} : { lowBalanceThreshold: node.threshold }),
      ...(node.limits === undefined ? {} : { spendLimits: node.limits }),
    });
    ids.set(node.name, createdAccount.parse(made.body).account.id);
  }
  const start = s.t.now();
  for (const g of c.grants) {
    await setUp("/v1/accounts/credits/add", {
      accountId: ext(g.to),
      amount: g.amount,
      ...(g.priority === undefined ? {} : { priority: g.priority }),
      ...(g.expiresInHours === undefined
        ? {}
        : { expiresAt: new Date(start + g.expiresInHours * HOUR).toISOString() }),
    });
  }
  for (const d of c.spend ?? []) {
    await setUp("/v1/accounts/credits/deduct", { accountId: ext(d.by), amount: d.amount });
  }
  for (const h of c.holds ?? []) {
    const ttl = h.ttlSeconds === undefined ? {} : { ttlSeconds: h.ttlSeconds };
    await setUp("/v1/reservations/create", { accountId: ext(h.by), amount: h.amount, ...ttl });
  }
  s.t.advance((c.advanceHours ?? 0) * HOUR);
  if (c.moveTo) s.t.setNow(nextBoundary(s.t.now(), c.moveTo));
  for (const change of c.changes ?? []) {
    const body =
      "parentId" in change
        ? { accountId: ext(change.of), parentId: ext(change.parentId) }
        : { accountId: ext(change.of), spendLimits: change.spendLimits };
    await setUp("/v1/accounts/update", body);
  }

  const externalIds = c.tree.map((node) => ext(node.name));
  const eventsBefore = (await stored(s.t, externalIds)).events.length;
  const accountId = c.byId ? (ids.get(c.write.by) ?? "none") : ext(c.write.by);
  const [path, body] =
    "deduct" in c.write
      ? ["/v1/accounts/credits/deduct", { accountId, amount: c.write.deduct, metadata: { n } }]
      : ["/v1/transactions/create", { accountId, type: "debit", amount: c.write.manual }];
  const key = c.key ? `mkey-${n}` : undefined;
  s.count.made = 0;
  const answer = await call(path, body, key);
  const plainMade = s.count.made;
  if (key !== undefined) await call(path, body, key);

  const after = await stored(s.t, externalIds);
  const nameOf = (ref: string | null | undefined) => {
    for (const [name, id] of ids) if (ref === id || ref === ext(name)) return name;
    return ref ?? null;
  };
  const fired = after.events.slice(eventsBefore).map((e) => {
    const { type, data } = eventPayload.parse(JSON.parse(e.payload));
    return `${type}:${nameOf(data.externalId ?? data.accountId)}`;
  });
  const last = after.transactions.at(-1);
  const booked =
    answer.status === 200 && last
      ? { on: nameOf(last.account_id) ?? "none", onBehalfOf: nameOf(last.on_behalf_of) }
      : null;
  return { answers, plainMade, answer, fired, booked, stored: after };
}

/** The name of the pool of `spender` in the tree as stored: the first account up that funds itself. */
function poolName(run: Run, spender: string, n: number): string {
  const rows = run.stored.accounts;
  let at = rows.find((a) => a.external_id === `mq${n}-${spender}`);
  while (at && at.funding !== "own") {
    const parent = at.parent_id;
    at = rows.find((a) => a.id === parent);
  }
  return at?.external_id.slice(`mq${n}-`.length) ?? "none";
}

/**
 * What the side's database holds of the tree's accounts `externalIds`: their rows (counters
 * included), every transaction booked on them or on their behalf with the draws of the debits,
 * their grants with what remains, their holds, their `spend_levels` rows, the limits' windows
 * reached, and the events naming any of them.
 */
async function stored(t: TestLedger, externalIds: string[]) {
  const db = t.ledger.db.read;
  const rows = await db
    .selectFrom("accounts")
    .selectAll()
    .where("project_id", "=", t.projectId)
    .where("external_id", "in", externalIds)
    .execute();
  const accounts = externalIds.map((ext) => {
    const row = rows.find((a) => a.external_id === ext);
    if (!row) throw new Error(`no account ${ext}`);
    return row;
  });
  const ids = accounts.map((a) => a.id);
  const transactions = await db
    .selectFrom("transactions")
    .selectAll()
    .where((eb) => eb.or([eb("account_id", "in", ids), eb("on_behalf_of", "in", ids)]))
    .orderBy("seq")
    .execute();
  const events = await db
    .selectFrom("webhook_events")
    .select(["id", "type", "payload", "created_at_ms"])
    .orderBy("id")
    .execute();
  return {
    accounts,
    transactions,
    draws: await db
      .selectFrom("debit_draws as d")
      .innerJoin("transactions as t", "t.id", "d.transaction_id")
      .selectAll("d")
      .where((eb) => eb.or([eb("t.account_id", "in", ids), eb("t.on_behalf_of", "in", ids)]))
      .orderBy("t.seq")
      .orderBy("d.draw_index")
      .execute(),
    grants: await db
      .selectFrom("credit_grants as g")
      .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq")
      .selectAll("g")
      .select("r.remaining_micros")
      .where("g.account_id", "in", ids)
      .orderBy("g.seq")
      .execute(),
    // Ids are monotonic in the process: on each side, their order is the order of creation.
    reservations: await db
      .selectFrom("reservations")
      .selectAll()
      .where("account_id", "in", ids)
      .orderBy("id")
      .execute(),
    spendLevels: await db
      .selectFrom("spend_levels as l")
      .innerJoin("transactions as t", "t.id", "l.transaction_id")
      .selectAll("l")
      .where("l.account_id", "in", ids)
      .orderBy("t.seq")
      .orderBy("l.account_id")
      .execute(),
    reached: await db
      .selectFrom("spend_limit_reached")
      .selectAll()
      .where("account_id", "in", ids)
      .orderBy("account_id")
      .orderBy("window_start_ms")
      .orderBy("limit_key")
      .execute(),
    events: events.filter((e) => ids.some((id) => e.payload.includes(`"${id}"`))),
  };
}

describe(`one debit rule for members, plain path against general path (${TEST_ENGINE})`, () => {
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

    // The case is what it says, on the general path: its answer, its events, where it booked.
    const { answer, fired, booked } = viaGeneral;
    if (c.refused) {
      const names = c.refused.names;
      expect(answer).toMatchObject({
        status: 402,
        body: { error: { code: c.refused.code, details: { externalId: `mq${n}-${names}` } } },
      });
      expect(booked).toBeNull();
    } else {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const spender = c.tree.find((node) => node.name === c.write.by);
      const member = spender?.parent !== undefined && (spender.funding ?? "parent") === "parent";
      expect(booked).toEqual({
        on: poolName(viaGeneral, c.write.by, n),
        onBehalfOf: member ? c.write.by : null,
      });
    }
    expect(fired).toEqual(c.events ?? []);
    expect(await general.t.verify()).toEqual([]);
    expect(await plain.t.verify()).toEqual([]);

    const plainHere = plainOn(c.plain, TEST_ENGINE);
    expect(viaPlain.plainMade, "the plain path made the write").toBe(plainHere ? 1 : 0);
  });
});
