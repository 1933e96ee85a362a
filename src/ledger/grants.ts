/**
 * The credit grants table (docs/api.md#credit-grants-expiry-and-priority). Every credit is a
 * grant with what is left of it (`remaining`), and every debit spends grants in the spending
 * order (docs/api.md#spending-order) inside the transaction of its ledger row, so that an
 * account's balance always equals the sum of its grants' remaining (docs/design.md#invariants):
 *
 * 1. what is left of grants whose expiry was booked while reservations held them;
 * 2. then priority ascending; 3. then expiresAt ascending, grants without one last;
 * 4. then ledger order (the grant's `seq`).
 *
 * This module reads and writes the table: a grant made with its credit, an account's grants in
 * spending order (one indexed query, `credit_grants_spend`), and a debit drawn from them. The
 * expiry rules, which book ledger rows, are in expiry.ts. Every function runs inside a write unit
 * that holds the account (its row lock on PostgreSQL, the serial queue on SQLite).
 */
import { type ExpressionBuilder, type Kysely, sql, type Transaction } from "kysely";
import type { AccountListOptions } from "../db/account-list.ts";
import { prepared } from "../db/prepared.ts";
import type { CreditGrantRow, DB } from "../db/schema.ts";
import { newId } from "../ids.ts";

/** The default priority of a credit (docs/api.md#grants). */
export const DEFAULT_PRIORITY = 50;
/** The priority of a grant of a non-rolling plan: spent before every other credit. */
export const PLAN_PRIORITY = 0;
/** Stands for "no expiry" in the spending order (2^53 − 1 ms, past every real date). */
const NO_EXPIRY_KEY = 9_007_199_254_740_991;
/** Grants read per query of a debit: almost every debit is covered by the first one. */
const SPEND_PAGE = 32;

/** The columns of a grant a debit or an expiry needs. */
export type SpendableGrant = Pick<
  CreditGrantRow,
  | "seq"
  | "id"
  | "account_plan_id"
  | "amount_micros"
  | "remaining_micros"
  | "priority"
  | "expires_at_ms"
  | "expiry_booked"
>;

/** An account's grants with something left, in spending order, as read in the current unit. */
export interface Spendable {
  /** The first grants in spending order (all of them when `complete`). */
  grants: SpendableGrant[];
  /** True when `grants` holds every grant of the account with something left. */
  complete: boolean;
  /** The earliest expiresAt (epoch ms) among grants whose expiry is not booked yet, or null. */
  nextDueMs: number | null;
}

/** The columns of a grant that spending and expiry read (of `grantsWithRemaining`). */
export const SPEND_COLUMNS = [
  "g.seq",
  "g.id",
  "g.account_plan_id",
  "g.amount_micros",
  "r.remaining_micros",
  "g.priority",
  "g.expires_at_ms",
  "g.expiry_booked",
] as const;

/**
 * The grants (`g`, credit_grants) with what remains of each (`r`, credit_grant_remaining): the
 * FROM of every query that reads a grant's remaining.
 */
export function grantsWithRemaining(db: Kysely<DB>) {
  return db
    .selectFrom("credit_grants as g")
    .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq");
}

type PageArgs = { accountId: string; offset: number };

/**
 * The spending order (docs/api.md#spending-order) over the grants aliased `t`, in the terms of
 * the index `credit_grants_spend`, so that a query ordered by it reads the index without a sort:
 * booked expiries first, then priority, then expiry (none last), then ledger order.
 */
export function spendingOrder(t: "g" | "f") {
  const column = (name: string) => sql.ref(`${t}.${name}`);
  return sql`${column("expiry_booked")} desc, ${column("priority")}, coalesce(${column("expires_at_ms")}, ${sql.lit(NO_EXPIRY_KEY)}), ${column("seq")}`;
}

/**
 * A page of the account's grants with something left, in spending order (the order of the
 * partial index `credit_grants_spend`, so no sort), each row carrying the earliest expiry still
 * to be booked (an uncorrelated subquery on `credit_grants_account_due`, evaluated once).
 * The literals (0, 2^53 − 1) stay in the SQL text so that the partial and expression indexes
 * match.
 */
const spendPage = prepared<PageArgs, SpendableGrant & { next_due_ms: number | null }>((db, arg) =>
  grantsWithRemaining(db)
    .select(SPEND_COLUMNS)
    .select((eb) =>
      eb
        .selectFrom("credit_grants as d")
        .select((d) => d.fn.min<number | null>("d.expires_at_ms").as("m"))
        .where("d.account_id", "=", arg("accountId"))
        .where("d.exhausted", "=", sql.lit(0))
        .where("d.expiry_booked", "=", sql.lit(0))
        .where("d.expires_at_ms", "is not", null)
        .as("next_due_ms"),
    )
    .where("g.account_id", "=", arg("accountId"))
    .where("g.exhausted", "=", sql.lit(0))
    .orderBy(spendingOrder("g"))
    .limit(SPEND_PAGE)
    .offset(arg("offset")),
);

/**
 * The account's grants with something left, in spending order: the first page, and whether it
 * holds them all. One indexed query.
 */
export async function readSpendable(
  trx: Transaction<DB>,
  accountId: string,
  offset = 0,
): Promise<Spendable> {
  const { rows } = await trx.executeQuery(spendPage(trx, { accountId, offset }));
  const first = rows[0];
  return {
    grants: rows.map(({ next_due_ms: _, ...grant }) => grant),
    complete: rows.length < SPEND_PAGE,
    nextDueMs: first?.next_due_ms == null ? null : Number(first.next_due_ms),
  };
}

/** What a debit took from one grant (micro-credits), in the order drawn. */
export interface Draw {
  grantSeq: number;
  takenMicros: number;
}

const takeFromGrant = prepared<{ seq: number; takeMicros: number }, unknown>((db, arg) =>
  db
    .updateTable("credit_grant_remaining")
    .set((eb) => ({ remaining_micros: eb("remaining_micros", "-", arg("takeMicros")) }))
    .where("seq", "=", arg("seq"))
    .where("remaining_micros", ">=", arg("takeMicros")),
);

/**
 * Spends `amountMicros` of the account's grants in spending order: updates only the grants it
 * draws from. `known` is the account's spendable grants as read earlier in this unit (after its
 * expiries were booked), which saves the read.
 * @returns what was taken from each grant, in the order drawn (none for 0)
 * @throws Error (a broken ledger invariant) when the grants hold less than `amountMicros`
 */
export async function drawDown(
  trx: Transaction<DB>,
  accountId: string,
  amountMicros: number,
  known?: Spendable,
): Promise<Draw[]> {
  // The common case in one statement: the first grant in spending order covers the debit.
  if (known === undefined && amountMicros > 0) {
    const first = await trx.executeQuery(
      takeFromFirst(trx, { accountId, takeMicros: amountMicros }),
    );
    const taken = first.rows[0];
    if (taken !== undefined) return [{ grantSeq: Number(taken.seq), takenMicros: amountMicros }];
  }
  const draws: Draw[] = [];
  let leftMicros = amountMicros;
  let page = known ?? (leftMicros > 0 ? await readSpendable(trx, accountId) : undefined);
  let offset = 0;
  while (leftMicros > 0 && page) {
    for (const grant of page.grants) {
      if (leftMicros === 0) break;
      const takenMicros = Math.min(grant.remaining_micros, leftMicros);
      draws.push({ grantSeq: grant.seq, takenMicros });
      leftMicros -= takenMicros;
    }
    if (leftMicros === 0 || page.complete) break;
    offset += page.grants.length;
    page = await readSpendable(trx, accountId, offset);
  }
  if (leftMicros > 0) {
    throw new Error(
      `ledger invariant: account ${accountId}'s grants lack ${leftMicros} micro-credits of a debit of ${amountMicros}`,
    );
  }
  for (const draw of draws) await takeFrom(trx, draw.grantSeq, draw.takenMicros);
  return draws;
}

/**
 * Records what the debit `transactionId` drew from each of several grants, in the order drawn
 * (`debit_draws`; a debit drawn from one grant names it in its own row instead).
 */
export async function recordDraws(
  trx: Transaction<DB>,
  transactionId: string,
  draws: readonly Draw[],
): Promise<void> {
  await trx
    .insertInto("debit_draws")
    .values(
      draws.map((d, i) => ({
        transaction_id: transactionId,
        draw_index: i,
        grant_seq: d.grantSeq,
        drawn_micros: d.takenMicros,
      })),
    )
    .execute();
}

/**
 * What the debit `transactionId` drew from each grant, in the order drawn: its one grant
 * (`grantSeq`, of its row) or its `debit_draws` rows; none for a debit booked before draws were
 * recorded (or a debit of 0).
 */
export async function drawsOf(
  db: Kysely<DB>,
  debit: { id: string; grant_seq: number | null; amount_micros: number },
): Promise<Draw[]> {
  if (debit.grant_seq !== null) {
    return [{ grantSeq: Number(debit.grant_seq), takenMicros: debit.amount_micros }];
  }
  const rows = await db
    .selectFrom("debit_draws")
    .select(["grant_seq", "drawn_micros"])
    .where("transaction_id", "=", debit.id)
    .orderBy("draw_index")
    .execute();
  return rows.map((r) => ({ grantSeq: Number(r.grant_seq), takenMicros: Number(r.drawn_micros) }));
}

const giveBackToGrant = prepared<{ seq: number; micros: number }, unknown>((db, arg) =>
  db
    .updateTable("credit_grant_remaining")
    .set((eb) => ({ remaining_micros: eb("remaining_micros", "+", arg("micros")) }))
    .where("seq", "=", arg("seq")),
);

/**
 * Gives `micros` back to the grant `seq` (a debit's reversal, docs/api.md#reversals): what
 * remains of it grows, never past its amount (the database refuses that).
 * @throws Error (a broken ledger invariant) when there is no such grant
 */
export async function giveBack(trx: Transaction<DB>, seq: number, micros: number): Promise<void> {
  const result = await trx.executeQuery(giveBackToGrant(trx, { seq, micros }));
  if (Number(result.numAffectedRows ?? 0) !== 1) {
    throw new Error(`ledger invariant: no grant ${seq} to give ${micros} micro-credits back to`);
  }
}

/**
 * Takes `takeMicros` from the account's first grant in spending order (the order of
 * `spendPage`), when that grant holds at least as much; changes no row otherwise.
 */
const takeFromFirst = prepared<{ accountId: string; takeMicros: number }, { seq: number }>(
  (db, arg) =>
    db
      .updateTable("credit_grant_remaining")
      .set((eb) => ({ remaining_micros: eb("remaining_micros", "-", arg("takeMicros")) }))
      .where("seq", "=", (eb) =>
        eb
          .selectFrom("credit_grants as f")
          .select("f.seq")
          .where("f.account_id", "=", arg("accountId"))
          .where("f.exhausted", "=", sql.lit(0))
          .orderBy(spendingOrder("f"))
          .limit(1),
      )
      .where("remaining_micros", ">=", arg("takeMicros"))
      .returning("seq"),
);

/**
 * What remains of the account's first grant in spending order (null when it has none), as a
 * subquery of a statement on `accounts`.
 */
export function firstGrantRemaining(eb: ExpressionBuilder<DB, "accounts">) {
  return eb
    .selectFrom("credit_grants as f")
    .innerJoin("credit_grant_remaining as fr", "fr.seq", "f.seq")
    .select("fr.remaining_micros")
    .whereRef("f.account_id", "=", "accounts.id")
    .where("f.exhausted", "=", sql.lit(0))
    .orderBy(spendingOrder("f"))
    .limit(1);
}

/**
 * Takes `takeMicros` from one grant (an expiry takes from the grant it removes).
 * @throws Error (a broken ledger invariant) when the grant holds less
 */
export async function takeFrom(trx: Transaction<DB>, seq: number, takeMicros: number) {
  const result = await trx.executeQuery(takeFromGrant(trx, { seq, takeMicros }));
  if (Number(result.numAffectedRows ?? 0) !== 1) {
    throw new Error(`ledger invariant: grant ${seq} holds less than ${takeMicros} micro-credits`);
  }
}

/** What a credit's grant is made of (docs/api.md#grants). */
export interface GrantTerms {
  /** 0–100, lower is spent first; default 50. */
  priority: number;
  /** Epoch ms after which what is left expires, or null. */
  expiresAtMs: number | null;
}

/** A new grant's columns; the database sets `seq`, `expiry_booked` and `exhausted`. */
type NewGrant = Omit<CreditGrantRow, "seq" | "expiry_booked" | "exhausted" | "remaining_micros">;

const insertGrant = prepared<NewGrant, { seq: number }>((db, arg) =>
  db
    .insertInto("credit_grants")
    .values({
      id: arg("id"),
      project_id: arg("project_id"),
      account_id: arg("account_id"),
      transaction_id: arg("transaction_id"),
      account_plan_id: arg("account_plan_id"),
      amount_micros: arg("amount_micros"),
      priority: arg("priority"),
      expires_at_ms: arg("expires_at_ms"),
      created_at_ms: arg("created_at_ms"),
    })
    .returning("seq"),
);

const insertRemaining = prepared<{ seq: number; remaining_micros: number }, unknown>((db, arg) =>
  db
    .insertInto("credit_grant_remaining")
    .values({ seq: arg("seq"), remaining_micros: arg("remaining_micros") }),
);

/**
 * Makes the grant of a credit transaction: `remaining` = `amount`.
 * @returns the new grant's id (`grt_…`)
 */
export async function makeGrant(
  trx: Transaction<DB>,
  credit: {
    projectId: string;
    accountId: string;
    transactionId: string;
    accountPlanId: string | null;
    amountMicros: number;
    createdAtMs: number;
  },
  terms: GrantTerms,
): Promise<string> {
  const id = newId("grt");
  const { rows } = await trx.executeQuery(
    insertGrant(trx, {
      id,
      project_id: credit.projectId,
      account_id: credit.accountId,
      transaction_id: credit.transactionId,
      account_plan_id: credit.accountPlanId,
      amount_micros: credit.amountMicros,
      priority: terms.priority,
      expires_at_ms: terms.expiresAtMs,
      created_at_ms: credit.createdAtMs,
    }),
  );
  const seq = rows[0]?.seq;
  if (seq === undefined) throw new Error(`ledger invariant: grant ${id} was not inserted`);
  await trx.executeQuery(
    insertRemaining(trx, { seq: Number(seq), remaining_micros: credit.amountMicros }),
  );
  return id;
}

/**
 * A page of the account's grants with what remains of each, newest first (ledger order, index
 * `credit_grants_account`), and how many the list holds (docs/api.md#grant-list);
 * `activeOnly`: only those `active` at `nowMs` (something left, not past expiresAt).
 */
export async function listGrants(db: Kysely<DB>, accountId: string, options: AccountListOptions) {
  let base = grantsWithRemaining(db).where("g.account_id", "=", accountId);
  if (options.activeOnly) {
    base = base
      .where("g.exhausted", "=", sql.lit(0))
      .where((eb) =>
        eb.or([eb("g.expires_at_ms", "is", null), eb("g.expires_at_ms", ">", options.nowMs)]),
      );
  }
  const rows = await base
    .selectAll("g")
    .select("r.remaining_micros")
    .orderBy("g.seq", "desc")
    .limit(options.limit)
    .offset(options.offset)
    .execute();
  const { count } = await base
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  return { rows, totalCount: Number(count) };
}
