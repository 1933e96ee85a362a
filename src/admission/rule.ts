/**
 * The admission rule of a write that spends (docs/design.md#the-admission-rule), written once.
 * Each condition is a function over an `Algebra`: evaluated on numbers, it is the general path's
 * check (`numbers`: the 402s, the low-balance event, a spend limit refusing or reached);
 * built on SQL expressions (`inSql`), it is the WHERE of SQLite's plain statements and the body
 * of PostgreSQL's generated functions (postgres.ts). A fast path is the region where `plainDebit`
 * and `plainLimit` hold: there the general path would refuse nothing and raise no event, so the
 * write needs only its move, its entry and its first grant's drawdown.
 *
 * Amounts are micro-credits. A nullable term may only be compared where a null comparison
 * makes the whole condition false in both algebras (on numbers a comparison with null is false,
 * in SQL it is null, and neither passes an `and` or counts in an `or`): the first grant's
 * remaining is compared so. Under a `not` the two differ (NOT NULL is NULL in SQL, true on
 * numbers), so a term compared there, the threshold, is tested with `isNull` first.
 */
import { type Expression, type SqlBool, sql } from "kysely";

/**
 * What the rule is written in: numbers `N` and conditions `B` with SQL's operations. `lit`
 * makes a constant (micro-credits).
 */
export interface Algebra<N, B> {
  lit(n: number): N;
  add(a: N, b: N): N;
  sub(a: N, b: N): N;
  ge(a: N, b: N): B;
  lt(a: N, b: N): B;
  isNull(a: N): B;
  and(...conditions: B[]): B;
  or(...conditions: B[]): B;
  not(condition: B): B;
}

/** The rule on numbers, for the general path (null stands for SQL's NULL: see the module). */
export const numbers: Algebra<number | null, boolean> = {
  lit: (n) => n,
  add: (a, b) => (a === null || b === null ? null : a + b),
  sub: (a, b) => (a === null || b === null ? null : a - b),
  ge: (a, b) => a !== null && b !== null && a >= b,
  lt: (a, b) => a !== null && b !== null && a < b,
  isNull: (a) => a === null,
  and: (...conditions) => conditions.every(Boolean),
  or: (...conditions) => conditions.some(Boolean),
  not: (condition) => !condition,
};

/** A number of the SQL algebra: any expression of a statement (a column, a parameter). */
export type SqlNumber = Expression<number | null>;
/** A condition of the SQL algebra. */
export type SqlCondition = Expression<SqlBool>;

/** The rule on SQL expressions, the same text on SQLite and PostgreSQL. */
export const inSql: Algebra<SqlNumber, SqlCondition> = {
  lit: (n) => sql<number>`${sql.lit(n)}`,
  add: (a, b) => sql<number>`(${a} + ${b})`,
  sub: (a, b) => sql<number>`(${a} - ${b})`,
  ge: (a, b) => sql<SqlBool>`(${a} >= ${b})`,
  lt: (a, b) => sql<SqlBool>`(${a} < ${b})`,
  isNull: (a) => sql<SqlBool>`(${a} IS NULL)`,
  and: (...conditions) => sql<SqlBool>`(${sql.join(conditions, sql` AND `)})`,
  or: (...conditions) => sql<SqlBool>`(${sql.join(conditions, sql` OR `)})`,
  not: (condition) => sql<SqlBool>`(NOT ${condition})`,
};

/**
 * The credits rule (docs/api.md#balance-adjustments-and-transactions): `available` covers
 * `needed`, what the write lowers it by. When false the general path answers 402
 * INSUFFICIENT_CREDITS.
 */
export function covers<N, B>(A: Algebra<N, B>, available: N, needed: N): B {
  return A.ge(available, needed);
}

/**
 * The low-balance rule (docs/api.md#low-balance-threshold): `available` goes from at or above
 * the account's `threshold` (`before`) to below it (`after`). When true the write's unit
 * raises `balance.low`; a null threshold never crosses.
 */
export function crosses<N, B>(A: Algebra<N, B>, threshold: N, before: N, after: N): B {
  return A.and(A.not(A.isNull(threshold)), A.ge(before, threshold), A.lt(after, threshold));
}

/**
 * The spending order's simple case (docs/api.md#spending-order): the account's first grant in
 * spending order (`firstRemaining`, null: none) alone covers `drawn`, or the write draws
 * nothing. Only then is a debit's drawdown one grant's update.
 */
export function firstGrantCovers<N, B>(A: Algebra<N, B>, firstRemaining: N, drawn: N): B {
  return A.or(A.ge(A.lit(0), drawn), A.ge(firstRemaining, drawn));
}

/** One spend limit's figures at a write (micro-credits; docs/api.md#spend-limits). */
export interface LimitTerms<N> {
  /** What spending debits booked in the limit's current window before the write. */
  spent: N;
  /** The account's pending, unexpired holds before the write. */
  held: N;
  /** What the write adds to spending (a debit beyond its hold, a reservation). */
  needed: N;
  /** The limit's amount. */
  amount: N;
}

/**
 * A hard limit's refusal (docs/api.md#spend-limits): the write adds to spending and spent +
 * held + needed passes the amount. The general path answers 402 SPEND_LIMIT_EXCEEDED.
 */
export function passesLimit<N, B>(A: Algebra<N, B>, l: LimitTerms<N>): B {
  return A.and(A.lt(A.lit(0), l.needed), A.lt(l.amount, A.add(A.add(l.spent, l.held), l.needed)));
}

/**
 * A limit reached by the write (docs/api.md#spend-limits): spent + held was below the amount
 * and spent + held + needed is at it or above (which only a write adding to spending does). The
 * general path raises `spend_limit.reached`.
 */
export function reachesLimit<N, B>(A: Algebra<N, B>, l: LimitTerms<N>): B {
  // Below before and at or above after: so the write adds to spending (needed > 0).
  const before = A.add(l.spent, l.held);
  return A.and(A.lt(before, l.amount), A.ge(A.add(before, l.needed), l.amount));
}

/** What the plain region of a debit or reservation is decided on (micro-credits). */
export interface PlainTerms<N, B> {
  /**
   * The account may go the plain way at all: its limits are none, or those whose conditions
   * the statement adds (`plainLimit`), it is in no tree (docs/api.md#pools-and-members: the
   * debit of an account in a tree is decided by this rule on its pool and every level of its
   * path instead, src/ledger/plain-member.ts), and no grant expiry is due or held
   * (docs/api.md#grants).
   */
  region: B;
  /** `available` before the write: balance − pending unexpired holds. */
  available: N;
  /** What the write lowers `available` by. */
  needed: N;
  /** What the write draws from the grants (a reservation: 0, it draws nothing yet). */
  drawn: N;
  /** The remaining of the account's first grant in spending order (null: none). */
  firstRemaining: N;
  /** The account's low-balance threshold (null: none). */
  threshold: N;
}

/**
 * The plain region of a debit, confirm or reservation: the general path would refuse nothing
 * (`covers`), raise no low-balance event (`crosses`) and draw one grant only
 * (`firstGrantCovers`). A write outside it takes the general path, which applies each rule.
 */
export function plainDebit<N, B>(A: Algebra<N, B>, t: PlainTerms<N, B>): B {
  return A.and(
    t.region,
    covers(A, t.available, t.needed),
    A.not(crosses(A, t.threshold, t.available, A.sub(t.available, t.needed))),
    firstGrantCovers(A, t.firstRemaining, t.drawn),
  );
}

/**
 * The plain region of one spend limit: the write reaches it not, and a hard limit does not
 * refuse it (`soft`: the limit is soft; a boolean when the statement knows it, else a term).
 */
export function plainLimit<N, B>(A: Algebra<N, B>, l: LimitTerms<N>, soft: boolean | B): B {
  const unreached = A.not(reachesLimit(A, l));
  if (soft === true) return unreached;
  const unrefused = A.not(passesLimit(A, l));
  return A.and(unreached, soft === false ? unrefused : A.or(soft, unrefused));
}
