/**
 * `ledger verify` (docs/api.md#amounts-and-money, docs/operations.md): recomputes every invariant over the whole database.
 *
 * - balance = Σ credits − Σ debits of the account;
 * - each row's balanceAfter = the previous row's balanceAfter ± its amount (the first row's
 *   from 0), and the last row's balanceAfter = the balance;
 * - 0 ≤ balance ≤ 9e9 credits; reserved ≤ balance;
 * - every confirmed reservation names an existing debit of its account (of its pool, on its
 *   behalf, for a member);
 * - balance = Σ remaining of the account's grants; 0 ≤ remaining ≤ amount, 0 ≤ priority ≤ 100,
 *   and a grant's credit transaction is a credit of its account of the same amount
 *   (docs/api.md#grant-invariant);
 * - every spend window counter equals the sum of its account's spending debits in its window,
 *   whose bounds are its period's in its zone (src/limits/counters.ts, docs/api.md#spend-limits);
 * - every usage record charged in credits names its own debit: a debit of its project and
 *   account, of the amount it was charged, which no other charged record names
 *   (docs/api.md#charging-usage-in-credits);
 * - every reversal names a transaction, is of the opposite type of its original, on its
 *   account, and reverses neither an expiry nor a reversal; no transaction's reversals add up
 *   to more than its amount; the grant a debit names as drawn from is one of its account's;
 *   a debit's recorded draws add up to its amount, so that no reversal gives a grant back more
 *   than the debit took from it (docs/api.md#reversals).
 * * - the tree of accounts inside accounts holds together (verify-tree.ts,
 *   docs/api.md#pools-and-members); what a pool's credits back counts its members' holds.
 * - every purchase through Stripe is its credits and its restores, and never takes back more
 *   than it granted (verify-purchases.ts, docs/api.md#selling-credits-through-stripe).
 *
 * The ledger is read in `seq` order: on PostgreSQL too, an account's entries ascend in seq along
 * their balanceAfter chain, since each is inserted under the account's row lock.
 */
import type { Kysely } from "kysely";
import { reservedMicros } from "../accounts/lookup.ts";
import type { HeldTree } from "../accounts/tree.ts";
import type { DB } from "../db/schema.ts";
import { inReadSnapshot } from "../db/snapshot.ts";
import { counterProblems } from "../limits/counters.ts";
import { fromMicros, MAX_BALANCE_MICROS } from "../money.ts";
import { purchaseProblems } from "./verify-purchases.ts";
import { reservedBacked, treeProblems } from "./verify-tree.ts";

export interface VerifyReport {
  accounts: number;
  transactions: number;
  problems: string[];
}

const PAGE = 5000;

/** Checks the balanceAfter chain of every account, reading the ledger in pages. */
async function checkChains(db: Kysely<DB>, balances: Map<string, number>, problems: string[]) {
  const last = new Map<string, number>();
  let afterSeq = 0;
  let count = 0;
  for (;;) {
    const rows = await db
      .selectFrom("transactions")
      .select(["seq", "id", "account_id", "type", "amount_micros", "balance_after_micros"])
      .where("seq", ">", afterSeq)
      .orderBy("seq")
      .limit(PAGE)
      .execute();
    for (const row of rows) {
      const previous = last.get(row.account_id) ?? 0;
      const delta = row.type === "credit" ? row.amount_micros : -row.amount_micros;
      if (previous + delta !== row.balance_after_micros) {
        problems.push(
          `account ${row.account_id}: transaction ${row.id} balanceAfter ${fromMicros(row.balance_after_micros)} != ${fromMicros(previous)} ${row.type === "credit" ? "+" : "-"} ${fromMicros(row.amount_micros)}`,
        );
      }
      last.set(row.account_id, row.balance_after_micros);
    }
    count += rows.length;
    const tail = rows.at(-1);
    if (!tail) break;
    afterSeq = tail.seq;
  }
  for (const [accountId, balance] of balances) {
    const chainEnd = last.get(accountId) ?? 0;
    if (chainEnd !== balance) {
      problems.push(
        `account ${accountId}: last balanceAfter ${fromMicros(chainEnd)} != balance ${fromMicros(balance)}`,
      );
    }
  }
  return count;
}

/**
 * Runs every check at `nowMs`. Read-only. On PostgreSQL every check reads one snapshot (a
 * REPEATABLE READ, READ ONLY transaction without statement timeouts: `inReadSnapshot`,
 * src/db/snapshot.ts), so it may run while service processes write.
 */
export async function verifyLedger(db: Kysely<DB>, nowMs: number): Promise<VerifyReport> {
  return inReadSnapshot(db, (snapshot) => checkLedger(snapshot, nowMs));
}

async function checkLedger(db: Kysely<DB>, nowMs: number): Promise<VerifyReport> {
  const problems: string[] = [];
  const accounts = await db
    .selectFrom("accounts")
    .leftJoin("transactions", "transactions.account_id", "accounts.id")
    .select((eb) => [
      "accounts.id as id",
      "accounts.balance_micros as balance",
      "accounts.parent_id as parent_id",
      "accounts.funding as funding",
      "accounts.tree_links as tree_links",
      eb.fn
        .coalesce(
          eb.fn.sum<number>(
            eb
              .case()
              .when("transactions.type", "=", "credit")
              .then(eb.ref("transactions.amount_micros"))
              .else(eb.neg(eb.ref("transactions.amount_micros")))
              .end(),
          ),
          eb.lit(0),
        )
        .as("net"),
    ])
    .groupBy(["accounts.id", "accounts.parent_id", "accounts.funding", "accounts.tree_links"])
    .execute();
  const balances = new Map<string, number>();
  // Each tree's holds, read once (verify-tree.ts `reservedBacked`).
  const trees = new Map<string, HeldTree>();
  for (const a of accounts) {
    balances.set(a.id, a.balance);
    if (Number(a.net) !== a.balance) {
      problems.push(
        `account ${a.id}: balance ${fromMicros(a.balance)} != credits - debits ${fromMicros(Number(a.net))}`,
      );
    }
    if (a.balance < 0 || a.balance > MAX_BALANCE_MICROS) {
      problems.push(`account ${a.id}: balance ${fromMicros(a.balance)} out of range`);
    }
    const own = () => reservedMicros(db, a.id, nowMs);
    const reserved = await reservedBacked(db, a, nowMs, own, trees);
    if (reserved > a.balance) {
      problems.push(
        `account ${a.id}: reserved ${fromMicros(reserved)} > balance ${fromMicros(a.balance)}`,
      );
    }
  }
  const transactions = await checkChains(db, balances, problems);
  const orphans = await db
    .selectFrom("reservations")
    .leftJoin("transactions", "transactions.id", "reservations.transaction_id")
    .select(["reservations.id as id"])
    .where("reservations.status", "=", "confirmed")
    .where((eb) =>
      eb.or([
        eb("transactions.id", "is", null),
        // A member's hold is confirmed by a debit on its pool, on its behalf.
        eb.and([
          eb("transactions.account_id", "!=", eb.ref("reservations.account_id")),
          eb.or([
            eb("transactions.on_behalf_of", "is", null),
            eb("transactions.on_behalf_of", "!=", eb.ref("reservations.account_id")),
          ]),
        ]),
      ]),
    )
    .execute();
  for (const o of orphans) problems.push(`reservation ${o.id}: confirmed without its debit`);
  await checkGrants(db, balances, problems);
  problems.push(...(await counterProblems(db)));
  problems.push(...(await chargeProblems(db)));
  problems.push(...(await reversalProblems(db)));
  problems.push(...(await treeProblems(db)));
  problems.push(...(await purchaseProblems(db)));
  return { accounts: accounts.length, transactions, problems };
}

/** The grant invariant (docs/api.md#grant-invariant): balance = Σ remaining, each in range. */
async function checkGrants(db: Kysely<DB>, balances: Map<string, number>, problems: string[]) {
  // Every grant with its remaining row (`credit_grant_remaining`); a missing one is reported.
  const grants = () =>
    db.selectFrom("credit_grants as g").leftJoin("credit_grant_remaining as r", "r.seq", "g.seq");
  const sums = await grants()
    .select((eb) => ["g.account_id", eb.fn.sum<number>("r.remaining_micros").as("remaining")])
    .groupBy("g.account_id")
    .execute();
  const remaining = new Map(sums.map((r) => [r.account_id, Number(r.remaining ?? 0)]));
  for (const [accountId, balance] of balances) {
    const sum = remaining.get(accountId) ?? 0;
    if (sum !== balance) {
      problems.push(
        `account ${accountId}: balance ${fromMicros(balance)} != grants' remaining ${fromMicros(sum)}`,
      );
    }
  }
  const broken = await grants()
    .select(["g.id", "g.amount_micros", "r.remaining_micros", "g.priority", "g.exhausted"])
    .where((eb) =>
      eb.or([
        eb("r.remaining_micros", "is", null),
        eb("g.amount_micros", "<=", 0),
        eb("r.remaining_micros", "<", 0),
        eb("r.remaining_micros", ">", eb.ref("g.amount_micros")),
        eb("g.priority", "<", 0),
        eb("g.priority", ">", 100),
        // `exhausted` is 1 exactly when nothing remains (docs/design.md#grant-indexes).
        eb.and([eb("g.exhausted", "=", 0), eb("r.remaining_micros", "=", 0)]),
        eb.and([eb("g.exhausted", "!=", 0), eb("r.remaining_micros", "!=", 0)]),
      ]),
    )
    .orderBy("g.seq")
    .execute();
  for (const g of broken) {
    const left = g.remaining_micros === null ? "missing" : fromMicros(g.remaining_micros);
    problems.push(
      `grant ${g.id}: remaining ${left} of amount ${fromMicros(g.amount_micros)}, priority ${g.priority}, exhausted ${g.exhausted}`,
    );
  }
  const unmatched = await db
    .selectFrom("credit_grants")
    .leftJoin("transactions", "transactions.id", "credit_grants.transaction_id")
    .select(["credit_grants.id as id"])
    .where("credit_grants.transaction_id", "is not", null)
    .where((eb) =>
      eb.or([
        eb("transactions.id", "is", null),
        eb("transactions.type", "!=", "credit"),
        eb("transactions.account_id", "!=", eb.ref("credit_grants.account_id")),
        eb("transactions.amount_micros", "!=", eb.ref("credit_grants.amount_micros")),
      ]),
    )
    .execute();
  for (const g of unmatched) problems.push(`grant ${g.id}: not the grant of its credit`);
}

/**
 * The link of each usage record charged in credits (`credits_charged_micros` > 0) to its debit
 * (docs/api.md#charging-usage-in-credits): the transaction its `transaction_id` names exists, is
 * a debit of the record's project and account (or of its pool, on its behalf), of exactly the micro-credits the record was
 * charged, and is named by no other charged record. A charge of 0 books no debit and is not
 * checked. Debits are not checked the other way: a deduction's description and metadata are the
 * caller's, so no text tells a charge's debit from a deduction that looks like one.
 * @returns one problem per record
 */
async function chargeProblems(db: Kysely<DB>): Promise<string[]> {
  const unmatched = await db
    .selectFrom("usage_records as u")
    .leftJoin("transactions as t", "t.id", "u.transaction_id")
    .select(["u.id as id", "u.credits_charged_micros as charged"])
    .where("u.credits_charged_micros", ">", 0)
    .where((eb) =>
      eb.or([
        eb("t.id", "is", null),
        eb("u.account_id", "is", null),
        eb("t.type", "!=", "debit"),
        eb("t.project_id", "!=", eb.ref("u.project_id")),
        // A member's charge is booked on its pool, on its behalf.
        eb.and([
          eb("t.account_id", "!=", eb.ref("u.account_id")),
          eb.or([
            eb("t.on_behalf_of", "is", null),
            eb("t.on_behalf_of", "!=", eb.ref("u.account_id")),
          ]),
        ]),
        eb("t.amount_micros", "!=", eb.ref("u.credits_charged_micros")),
      ]),
    )
    .orderBy("u.seq")
    .execute();
  const shared = await db
    .selectFrom("usage_records as u")
    .select(["u.transaction_id as transactionId"])
    .where("u.credits_charged_micros", ">", 0)
    .where("u.transaction_id", "is not", null)
    .groupBy("u.transaction_id")
    .having((eb) => eb.fn.countAll(), ">", 1)
    .orderBy("u.transaction_id")
    .execute();
  return [
    ...unmatched.map(
      (u) => `usage record ${u.id}: charged ${fromMicros(Number(u.charged))} without its debit`,
    ),
    ...shared.map((s) => `transaction ${s.transactionId}: the debit of more than one charge`),
  ];
}

/** The reversal checks of `ledger verify` (see the module comment). @returns the problems */
async function reversalProblems(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const pairs = await db
    .selectFrom("transactions as r")
    .innerJoin("transactions as o", "o.id", "r.reversal_of")
    .select([
      "r.id as id",
      "r.type as type",
      "r.account_id as account",
      "o.id as original",
      "o.type as originalType",
      "o.account_id as originalAccount",
      "o.source as originalSource",
      "o.reversal_of as originalReversalOf",
    ])
    .execute();
  for (const p of pairs) {
    if (p.type === p.originalType || p.account !== p.originalAccount) {
      problems.push(`reversal ${p.id}: not the opposite of ${p.original} on its account`);
    }
    if (p.originalReversalOf !== null || p.originalSource.endsWith("expiry")) {
      problems.push(`reversal ${p.id}: reverses ${p.original}, which is not reversible`);
    }
  }
  const dangling = await db
    .selectFrom("transactions as r")
    .leftJoin("transactions as o", "o.id", "r.reversal_of")
    .select(["r.id", "r.reversal_of"])
    .where("r.reversal_of", "is not", null)
    .where("o.id", "is", null)
    .execute();
  for (const d of dangling) problems.push(`reversal ${d.id}: no transaction ${d.reversal_of}`);
  const strays = await db
    .selectFrom("transactions as t")
    .leftJoin("credit_grants as g", "g.seq", "t.grant_seq")
    .select(["t.id", "t.grant_seq"])
    .where("t.grant_seq", "is not", null)
    .where((eb) =>
      eb.or([eb("g.seq", "is", null), eb("g.account_id", "!=", eb.ref("t.account_id"))]),
    )
    .execute();
  for (const t of strays) {
    problems.push(`debit ${t.id}: drew from grant ${t.grant_seq}, not a grant of its account`);
  }
  const over = await db
    .selectFrom("transactions as r")
    .innerJoin("transactions as o", "o.id", "r.reversal_of")
    .select((eb) => ["o.id", "o.amount_micros", eb.fn.sum<number>("r.amount_micros").as("sum")])
    .groupBy(["o.id", "o.amount_micros"])
    .having((eb) => eb(eb.fn.sum("r.amount_micros"), ">", eb.ref("o.amount_micros")))
    .execute();
  for (const o of over) {
    problems.push(
      `transaction ${o.id}: reversals ${fromMicros(Number(o.sum))} > amount ${fromMicros(Number(o.amount_micros))}`,
    );
  }
  const draws = await db
    .selectFrom("debit_draws as d")
    .innerJoin("transactions as t", "t.id", "d.transaction_id")
    .select((eb) => [
      "t.id",
      "t.type",
      "t.amount_micros",
      "t.grant_seq",
      eb.fn.sum<number>("d.drawn_micros").as("sum"),
    ])
    .groupBy(["t.id", "t.type", "t.amount_micros", "t.grant_seq"])
    .execute();
  for (const d of draws) {
    if (d.type !== "debit" || d.grant_seq !== null || Number(d.sum) !== Number(d.amount_micros)) {
      problems.push(`debit ${d.id}: its draws ${fromMicros(Number(d.sum))} are not its amount`);
    }
  }
  return problems;
}
