/**
 * The usage summary (docs/api.md#usage-list-and-summary) and its groups (docs/api.md#usage-over-time):
 * totals, `byContext` and `byModel` of the filtered records, and with `groupBy` the same records
 * summed per UTC day, model, account or context.
 *
 * Exactness: a record's cost is stored as whole micro-USD plus a pico-USD remainder below 10^6
 * (docs/design.md#exact-money-in-storage). SQL sums three parts, each at most 2 × 10^6 per
 * record: the whole USD (`cost_micro_usd / 10^6`), the micro-USD below a dollar and the pico-USD
 * remainder, so no `SUM` leaves 2^53, let alone 64 bits (where SQLite stops with "integer
 * overflow"), before billions of records (docs/design.md#usage-summaries). Every sum is read
 * as text (`CAST(SUM(…) AS TEXT)`; PostgreSQL's `SUM` of a `BIGINT` is a `NUMERIC`) and
 * recombined in BigInt, so nothing passes through a double on the way. Credits charged
 * (docs/api.md#charging-usage-in-credits; null counts 0) are summed the same way, as whole
 * credits and the micro-credits below one, each at most 10^9 per record.
 *
 * Credits reversed (docs/api.md#reversals): what the reversals of the charged records' debits add
 * up to. The covering indexes of the usage sums hold no `transaction_id`, so the records are not
 * joined to their reversals: a second aggregate per part starts from the reversals (the partial
 * index `transactions_reversal_of`), finds each one's charged record by `usage_transaction`,
 * applies the same filter and groups by the same keys. It reads as many rows as the project has
 * reversals, and nothing more when it has none. A reversal is at most its original's amount, so
 * its two parts are bounded as the charges' are.
 *
 * Consistency: the groups and the summary come from one SQL statement (a `UNION ALL`), so they
 * read one snapshot on both engines and the groups always add up to the totals beside them.
 */
import { type Kysely, sql } from "kysely";

import { unindexedOnSqlite, withoutIndexOrderOnSqlite } from "../db/index-hints.ts";
import type { DB, UsageContext } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bigMicrosToDecimal, ExactDecimal, picoUsdToDecimal } from "../money.ts";
import type { WireOf } from "../wire.ts";
import type { summarySchema, usageGroupSchema } from "./schemas.ts";
import { filteredUsage, type UsageFilter } from "./service.ts";

/** What `groupBy` groups usage records by (docs/api.md#usage-over-time). */
export type UsageGroupBy = "day" | "model" | "account" | "context";

/** Most groups one summary returns; more is a 400 that asks to narrow the query. */
export const MAX_USAGE_GROUPS = 1000;

const MS_PER_DAY = 86_400_000;
const MILLION = 1_000_000n;

/**
 * The UTC day of `created_at_ms`: the whole number of days since the epoch (integer division,
 * the same on both engines; times are never before 1970), computed by the database so that it
 * groups; it becomes `YYYY-MM-DD` here.
 */
const DAY = sql<number>`created_at_ms / ${sql.lit(MS_PER_DAY)}`;

/**
 * The day of a part without one: a typed NULL, since PostgreSQL gives two untyped NULLs of a
 * `UNION ALL` the type text, which the day part's integer then does not match.
 */
const NO_DAY = sql<number | null>`CAST(NULL AS BIGINT)`;

/** `CAST(SUM(expr) AS TEXT)`: an exact sum as decimal text on both engines. */
function sumText(expr: ReturnType<typeof sql.raw>) {
  return sql<string>`CAST(SUM(${expr}) AS TEXT)`;
}

/** A sum that a part does not compute: 0, as the text the other parts' sums are. */
const none = () => sql<string>`'0'`;

/** The sums of one group of records, in the order the statement selects them. */
function sums() {
  return [
    sql<number>`COUNT(*)`.as("request_count"),
    sumText(sql.raw("input_tokens")).as("input_tokens"),
    sumText(sql.raw("cached_tokens")).as("cached_tokens"),
    sumText(sql.raw("output_tokens")).as("output_tokens"),
    sumText(sql.raw(`cost_micro_usd / ${MILLION}`)).as("cost_usd"),
    sumText(sql.raw(`cost_micro_usd % ${MILLION}`)).as("cost_micro_rem"),
    sumText(sql.raw("cost_pico_rem")).as("cost_pico_rem"),
    sumText(sql.raw(`COALESCE(credits_charged_micros, 0) / ${MILLION}`)).as("credits"),
    sumText(sql.raw(`COALESCE(credits_charged_micros, 0) % ${MILLION}`)).as("credits_micro_rem"),
    none().as("reversed"),
    none().as("reversed_micro_rem"),
  ] as const;
}

/**
 * The sums of one group of reversals (`rv.micros`, joined to their records), in the same order:
 * nothing but the credits reversed, so that folding them into the records' groups adds only
 * those.
 */
function reversalSums() {
  return [
    sql<number>`0`.as("request_count"),
    none().as("input_tokens"),
    none().as("cached_tokens"),
    none().as("output_tokens"),
    none().as("cost_usd"),
    none().as("cost_micro_rem"),
    none().as("cost_pico_rem"),
    none().as("credits"),
    none().as("credits_micro_rem"),
    sumText(sql.raw(`rv.micros / ${MILLION}`)).as("reversed"),
    sumText(sql.raw(`rv.micros % ${MILLION}`)).as("reversed_micro_rem"),
  ] as const;
}

interface SumRow {
  request_count: number | string;
  input_tokens: string;
  cached_tokens: string;
  output_tokens: string;
  cost_usd: string;
  cost_micro_rem: string;
  cost_pico_rem: string;
  credits: string;
  credits_micro_rem: string;
  reversed: string;
  reversed_micro_rem: string;
}

interface Totals {
  count: bigint;
  input: bigint;
  cached: bigint;
  output: bigint;
  pico: bigint;
  /** Micro-credits charged. */
  credits: bigint;
  /** Micro-credits of those charges reversed. */
  reversed: bigint;
}

const ZERO: Totals = {
  count: 0n,
  input: 0n,
  cached: 0n,
  output: 0n,
  pico: 0n,
  credits: 0n,
  reversed: 0n,
};

function totalsOf(row: SumRow): Totals {
  return {
    count: BigInt(row.request_count),
    input: BigInt(row.input_tokens),
    cached: BigInt(row.cached_tokens),
    output: BigInt(row.output_tokens),
    pico:
      (BigInt(row.cost_usd) * MILLION + BigInt(row.cost_micro_rem)) * MILLION +
      BigInt(row.cost_pico_rem),
    credits: BigInt(row.credits) * MILLION + BigInt(row.credits_micro_rem),
    reversed: BigInt(row.reversed) * MILLION + BigInt(row.reversed_micro_rem),
  };
}

function plus(a: Totals, b: Totals): Totals {
  return {
    count: a.count + b.count,
    input: a.input + b.input,
    cached: a.cached + b.cached,
    output: a.output + b.output,
    pico: a.pico + b.pico,
    credits: a.credits + b.credits,
    reversed: a.reversed + b.reversed,
  };
}

/** A whole count as a JSON number: a plain number while a double holds it, else its literal. */
function wholeNumber(n: bigint): number | ExactDecimal {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : new ExactDecimal(n.toString());
}

/**
 * The summary's (model, context) grouping. Over one account on SQLite the keys are written
 * `+model_id, +context`, which no index orders: SQLite then reads the account's entries of the
 * covering index `usage_project_account` and sorts them, instead of walking every record of
 * the project in `usage_project_model` order (sql/0012_usage_charge_indexes.sql). PostgreSQL
 * plans by its statistics and has no `+` on text.
 */
function modelGroups(db: Kysely<DB>, f: UsageFilter) {
  const keys = ["model_id", "context"] as const;
  return f.accountId === undefined ? keys : withoutIndexOrderOnSqlite(db, keys);
}

/**
 * The project's reversals, each with the transaction it reverses (`reversal_of`) and its amount
 * (`micros`): the rows the reversal parts start from. Only these two columns are seen outside,
 * so the usage filter's column names stay unambiguous. On SQLite the project is written
 * `+project_id`, so that its planner reads the partial index `transactions_reversal_of` (the
 * reversals alone) rather than every transaction of the project by `transactions_project`.
 */
function projectReversals(db: Kysely<DB>, projectId: string) {
  const project = unindexedOnSqlite(db, "project_id");
  return db
    .selectFrom("transactions")
    .select(["reversal_of", "amount_micros as micros"])
    .where("reversal_of", "is not", null)
    .where(sql`${project}`, "=", projectId)
    .as("rv");
}

/**
 * The filtered records that were charged, each joined to every reversal of its debit (`rv`):
 * what the reversal parts sum, by the same filter and keys as the records' parts. The
 * reversals come first, in a `CROSS JOIN`, which SQLite keeps as the outer loop: each finds its
 * record by `usage_transaction` (`byTransaction`), so the part reads no record that was not
 * reversed (an inner join, or the filter's own indexes, let SQLite walk every filtered record
 * instead, by an index that does not cover `transaction_id`). PostgreSQL plans the join by its
 * statistics either way.
 */
function reversedUsage(db: Kysely<DB>, projectId: string, f: UsageFilter) {
  const charged = filteredUsage(db, projectId, f, { byTransaction: true })
    .where("credits_charged_micros", "is not", null)
    .select(["transaction_id", "model_id", "context", "account_id", "created_at_ms"])
    .as("u");
  return db
    .selectFrom(projectReversals(db, projectId))
    .crossJoin(charged)
    .whereRef("u.transaction_id", "=", "rv.reversal_of");
}

/**
 * One statement: the (model, context) groups the summary is made of (`part` 0), and with
 * `groupBy` day or account the groups by day (`part` 1) or by account (`part` 2; at most
 * MAX_USAGE_GROUPS + 1 of them, so that one too many is seen). Groups by model and by context are
 * folded from the summary's groups (there are no more of those than models in the catalog).
 * The summary groups by `model_id, context` in that order, the order of the covering index
 * `usage_project_model` (sql/0005_usage_summary.sql), so the database need not sort. Each part
 * has a twin, `part` + 3, that sums the reversals of the same records' charges by the same keys
 * (only `reversed` is not 0 there), folded into the part's groups.
 */
export function usageSummaryQuery(
  db: Kysely<DB>,
  projectId: string,
  f: UsageFilter,
  groupBy?: UsageGroupBy,
) {
  const summaryKeys = (part: number) =>
    [
      sql<number>`${sql.lit(part)}`.as("part"),
      sql<string | null>`model_id`.as("model_id"),
      sql<UsageContext | null>`context`.as("context"),
      NO_DAY.as("day"),
      sql<string | null>`NULL`.as("account_id"),
    ] as const;
  const dayKeys = (part: number) =>
    [
      sql<number>`${sql.lit(part)}`.as("part"),
      sql<string | null>`NULL`.as("model_id"),
      sql<UsageContext | null>`NULL`.as("context"),
      DAY.as("day"),
      sql<string | null>`NULL`.as("account_id"),
    ] as const;
  const accountKeys = (part: number) =>
    [
      sql<number>`${sql.lit(part)}`.as("part"),
      sql<string | null>`NULL`.as("model_id"),
      sql<UsageContext | null>`NULL`.as("context"),
      NO_DAY.as("day"),
      sql<string | null>`account_id`.as("account_id"),
    ] as const;
  const bySummary = filteredUsage(db, projectId, f)
    .select([...summaryKeys(0), ...sums()])
    .groupBy(modelGroups(db, f));
  const reversedBySummary = reversedUsage(db, projectId, f)
    .select([...summaryKeys(3), ...reversalSums()])
    .groupBy(["model_id", "context"]);
  const summary = bySummary.unionAll(reversedBySummary);
  if (groupBy !== "day" && groupBy !== "account") return summary;
  const base = filteredUsage(db, projectId, f);
  const reversed = reversedUsage(db, projectId, f);
  // Days are few (one a day the service has run), so they are all read, and PostgreSQL hashes
  // them; accounts may be millions, so the database stops after one group too many. The
  // reversals' groups are among the records' groups, so the same bound never cuts them short
  // when the records' groups are within it.
  if (groupBy === "day") {
    return summary
      .unionAll(base.select([...dayKeys(1), ...sums()]).groupBy(DAY))
      .unionAll(reversed.select([...dayKeys(4), ...reversalSums()]).groupBy(DAY));
  }
  const byAccount = base.select([...accountKeys(2), ...sums()]).groupBy("account_id");
  const reversedByAccount = reversed
    .select([...accountKeys(5), ...reversalSums()])
    .groupBy("account_id");
  return summary
    .unionAll(db.selectFrom(byAccount.limit(MAX_USAGE_GROUPS + 1).as("g")).selectAll())
    .unionAll(db.selectFrom(reversedByAccount.limit(MAX_USAGE_GROUPS + 1).as("r")).selectAll());
}

interface Group {
  /** The group's key as the API writes it (`YYYY-MM-DD` for a day). */
  key: string | null;
  /** What days are ordered by: the day number. */
  day?: number;
  totals: Totals;
}

/** Adds `totals` to the group of `key` in `groups` (`day`: the day number it sorts by). */
function addTo(
  groups: Map<string | null, Group>,
  key: string | null,
  totals: Totals,
  day?: number,
): void {
  const group = groups.get(key);
  const sum = group ? plus(group.totals, totals) : totals;
  groups.set(key, day === undefined ? { key, totals: sum } : { key, day, totals: sum });
}

/**
 * Sorts groups as docs/api.md#usage-over-time says: days ascending; anything else by cost
 * descending, then key ascending (bytewise, as the database orders ids), a null key last.
 */
function sortGroups(groups: Group[]): Group[] {
  const byKey = (a: Group, b: Group) => {
    if (a.key === b.key) return 0;
    if (a.key === null) return 1;
    if (b.key === null) return -1;
    return a.key < b.key ? -1 : 1;
  };
  return groups.sort((a, b) => {
    if (a.day !== undefined && b.day !== undefined) return a.day - b.day;
    if (a.totals.pico !== b.totals.pico) return a.totals.pico > b.totals.pico ? -1 : 1;
    return byKey(a, b);
  });
}

/** The `externalId` of each account id, for the account groups. */
async function externalIds(db: Kysely<DB>, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom("accounts")
    .select(["id", "external_id"])
    .where("id", "in", ids)
    .execute();
  return new Map(rows.map((r) => [r.id, r.external_id]));
}

type GroupJson = WireOf<typeof usageGroupSchema>;

/** The `summary.groups` array: sorted, with each account group's `externalId`. */
async function groupsJson(db: Kysely<DB>, groups: Group[], groupBy: UsageGroupBy) {
  const sorted = sortGroups(groups);
  const accounts =
    groupBy === "account"
      ? await externalIds(
          db,
          sorted.flatMap((g) => (g.key === null ? [] : [g.key])),
        )
      : undefined;
  return sorted.map((g): GroupJson => {
    const account = accounts && {
      externalId: g.key === null ? null : (accounts.get(g.key) ?? null),
    };
    return {
      key: g.key,
      ...account,
      requestCount: wholeNumber(g.totals.count),
      inputTokens: wholeNumber(g.totals.input),
      cachedTokens: wholeNumber(g.totals.cached),
      outputTokens: wholeNumber(g.totals.output),
      costUsd: picoUsdToDecimal(g.totals.pico),
      creditsCharged: bigMicrosToDecimal(g.totals.credits),
      creditsReversed: bigMicrosToDecimal(g.totals.reversed),
    };
  });
}

/** `YYYY-MM-DD` of a day number (whole UTC days since the epoch). */
function dayKey(day: number): string {
  return new Date(day * MS_PER_DAY).toISOString().slice(0, 10);
}

/**
 * The Usage summary of the filtered records, summed exactly, with `groups` when `groupBy` is
 * given (docs/api.md#usage-over-time). `byContext` always has both `customer` and `system`.
 * @throws ApiError VALIDATION_ERROR when `groupBy` would give more than MAX_USAGE_GROUPS groups
 */
export async function summarizeUsage(
  db: Kysely<DB>,
  projectId: string,
  f: UsageFilter,
  groupBy?: UsageGroupBy,
): Promise<WireOf<typeof summarySchema>> {
  const rows = await usageSummaryQuery(db, projectId, f, groupBy).execute();
  let total = ZERO;
  const byContext: Record<UsageContext, bigint> = { customer: 0n, system: 0n };
  const byModel = new Map<string | null, Group>();
  const byKey = new Map<string | null, Group>();
  for (const row of rows) {
    const totals = totalsOf(row);
    // A reversal part (3, 4, 5) adds to its records' part (0, 1, 2): only `reversed`.
    const part = Number(row.part) % 3;
    if (part === 1 && row.day !== null) {
      const day = Number(row.day);
      addTo(byKey, dayKey(day), totals, day);
    } else if (part === 2) {
      addTo(byKey, row.account_id, totals);
    } else if (row.context !== null) {
      total = plus(total, totals);
      byContext[row.context] += totals.pico;
      addTo(byModel, row.model_id, totals);
      if (groupBy === "context") addTo(byKey, row.context, totals);
    }
  }
  const groups = groupBy === "model" ? [...byModel.values()] : [...byKey.values()];
  if (groups.length > MAX_USAGE_GROUPS) {
    throw new ApiError(
      "VALIDATION_ERROR",
      `groupBy=${groupBy} gives more than ${MAX_USAGE_GROUPS} groups: narrow the dates or filters`,
      [{ path: "query.groupBy", message: `more than ${MAX_USAGE_GROUPS} groups` }],
    );
  }
  const summary: WireOf<typeof summarySchema> = {
    totalCostUsd: picoUsdToDecimal(total.pico),
    totalInputTokens: wholeNumber(total.input),
    totalOutputTokens: wholeNumber(total.output),
    creditsCharged: bigMicrosToDecimal(total.credits),
    creditsReversed: bigMicrosToDecimal(total.reversed),
    byContext: {
      customer: picoUsdToDecimal(byContext.customer),
      system: picoUsdToDecimal(byContext.system),
    },
    byModel: Object.fromEntries(
      [...byModel.values()].map((m) => [
        m.key,
        { costUsd: picoUsdToDecimal(m.totals.pico), count: wholeNumber(m.totals.count) },
      ]),
    ),
  };
  if (groupBy !== undefined) summary.groups = await groupsJson(db, groups, groupBy);
  return summary;
}
