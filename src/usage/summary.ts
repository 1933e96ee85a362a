/**
 * The usage summary (docs/api.md#usage-list-and-summary) and its groups (docs/api.md#usage-over-time):
 * totals, `byContext` and `byModel` of the filtered records, and with `groupBy` the same records
 * summed per UTC day, model, account or context.
 *
 * Exactness: a record's cost is stored as whole micro-USD plus a pico-USD remainder below 10^6
 * (docs/design.md#exact-money-in-storage). SQL sums three parts, each below 10^6 per record: the
 * whole USD (`cost_micro_usd / 10^6`), the micro-USD below a dollar and the pico-USD remainder,
 * so no `SUM` can leave 64 bits (SQLite stops with "integer overflow" there) before billions of
 * records. Every sum is read as text (`CAST(SUM(…) AS TEXT)`; PostgreSQL's `SUM` of a `BIGINT`
 * is a `NUMERIC`) and recombined in BigInt, so nothing passes through a double on the way.
 *
 * Consistency: the groups and the summary come from one SQL statement (a `UNION ALL`), so they
 * read one snapshot on both engines and the groups always add up to the totals beside them.
 */
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { DB, UsageContext } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import type { WireOf } from "../http/respond.ts";
import { ExactDecimal, picoUsdToDecimal } from "../money.ts";
import type { summarySchema, usageGroupSchema } from "./schemas.ts";
import { filteredUsage, type UsageFilter } from "./service.ts";

/** What `groupBy` groups usage records by (docs/api.md#usage-over-time). */
export type UsageGroupBy = "day" | "model" | "account" | "context";

/** Most groups one summary returns; more is a 400 that asks to narrow the query. */
export const MAX_USAGE_GROUPS = 1000;

const MS_PER_DAY = 86_400_000;
const MILLION = 1_000_000n;

/**
 * The SQL of each grouping key. The day is the whole number of UTC days since the epoch of
 * `created_at_ms` (integer division, the same on both engines: times are never before 1970),
 * computed in SQL so that the database groups; it becomes `YYYY-MM-DD` here.
 */
const GROUP_KEY: Record<UsageGroupBy, RawBuilder<string | null>> = {
  day: sql`CAST(created_at_ms / ${sql.lit(MS_PER_DAY)} AS TEXT)`,
  model: sql`model_id`,
  account: sql`account_id`,
  context: sql`context`,
};

/** `CAST(SUM(expr) AS TEXT)`: an exact sum as decimal text on both engines. */
function sumText(expr: ReturnType<typeof sql.raw>) {
  return sql<string>`CAST(SUM(${expr}) AS TEXT)`;
}

/** The sums of one group, in the order the statement selects them. */
function sums() {
  return [
    sql<number>`COUNT(*)`.as("request_count"),
    sumText(sql.raw("input_tokens")).as("input_tokens"),
    sumText(sql.raw("cached_tokens")).as("cached_tokens"),
    sumText(sql.raw("output_tokens")).as("output_tokens"),
    sumText(sql.raw(`cost_micro_usd / ${MILLION}`)).as("cost_usd"),
    sumText(sql.raw(`cost_micro_usd % ${MILLION}`)).as("cost_micro_rem"),
    sumText(sql.raw("cost_pico_rem")).as("cost_pico_rem"),
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
}

interface Totals {
  count: bigint;
  input: bigint;
  cached: bigint;
  output: bigint;
  pico: bigint;
}

const ZERO: Totals = { count: 0n, input: 0n, cached: 0n, output: 0n, pico: 0n };

function totalsOf(row: SumRow): Totals {
  return {
    count: BigInt(row.request_count),
    input: BigInt(row.input_tokens),
    cached: BigInt(row.cached_tokens),
    output: BigInt(row.output_tokens),
    pico:
      (BigInt(row.cost_usd) * MILLION + BigInt(row.cost_micro_rem)) * MILLION +
      BigInt(row.cost_pico_rem),
  };
}

function plus(a: Totals, b: Totals): Totals {
  return {
    count: a.count + b.count,
    input: a.input + b.input,
    cached: a.cached + b.cached,
    output: a.output + b.output,
    pico: a.pico + b.pico,
  };
}

/** A whole count as a JSON number: a plain number while a double holds it, else its literal. */
function wholeNumber(n: bigint): number | ExactDecimal {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : new ExactDecimal(n.toString());
}

/**
 * One statement: the groups by `groupBy` (at most MAX_USAGE_GROUPS + 1 of them, so that one
 * too many is seen), then the (context, model) groups the summary is made of. `part` tells them
 * apart: 0 for a group of `groupBy`, 1 for a summary group.
 */
function summaryQuery(db: Kysely<DB>, projectId: string, f: UsageFilter, groupBy?: UsageGroupBy) {
  const bySummary = filteredUsage(db, projectId, f)
    .select([
      sql<number>`1`.as("part"),
      sql<string | null>`context`.as("key"),
      "model_id",
      ...sums(),
    ])
    .groupBy(["context", "model_id"]);
  if (groupBy === undefined) return bySummary;
  const key = GROUP_KEY[groupBy];
  const byKey = filteredUsage(db, projectId, f)
    .select([
      sql<number>`0`.as("part"),
      key.as("key"),
      sql<string | null>`NULL`.as("model_id"),
      ...sums(),
    ])
    .groupBy(key)
    .limit(MAX_USAGE_GROUPS + 1);
  return db.selectFrom(byKey.as("g")).selectAll().unionAll(bySummary);
}

interface Group {
  key: string | null;
  totals: Totals;
}

/**
 * Sorts groups as docs/api.md#usage-over-time says: days ascending; anything else by cost
 * descending, then key ascending (bytewise, as the database orders ids), a null key last.
 */
function sortGroups(groups: Group[], groupBy: UsageGroupBy): Group[] {
  const byKey = (a: Group, b: Group) => {
    if (a.key === b.key) return 0;
    if (a.key === null) return 1;
    if (b.key === null) return -1;
    return a.key < b.key ? -1 : 1;
  };
  if (groupBy === "day") return groups.sort((a, b) => Number(a.key) - Number(b.key));
  return groups.sort((a, b) => {
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

async function groupsJson(db: Kysely<DB>, groups: Group[], groupBy: UsageGroupBy) {
  const sorted = sortGroups(groups, groupBy);
  const accounts =
    groupBy === "account"
      ? await externalIds(
          db,
          sorted.flatMap((g) => (g.key === null ? [] : [g.key])),
        )
      : undefined;
  return sorted.map((g): GroupJson => {
    const key =
      groupBy === "day" ? new Date(Number(g.key) * MS_PER_DAY).toISOString().slice(0, 10) : g.key;
    const account = accounts && {
      externalId: g.key === null ? null : (accounts.get(g.key) ?? null),
    };
    return {
      key,
      ...account,
      requestCount: wholeNumber(g.totals.count),
      inputTokens: wholeNumber(g.totals.input),
      cachedTokens: wholeNumber(g.totals.cached),
      outputTokens: wholeNumber(g.totals.output),
      costUsd: picoUsdToDecimal(g.totals.pico),
    };
  });
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
  const rows = await summaryQuery(db, projectId, f, groupBy).execute();
  let total = ZERO;
  const byContext: Record<UsageContext, bigint> = { customer: 0n, system: 0n };
  const byModel = new Map<string, Totals>();
  const groups: Group[] = [];
  for (const row of rows) {
    const totals = totalsOf(row);
    if (Number(row.part) === 0) {
      groups.push({ key: row.key, totals });
      continue;
    }
    total = plus(total, totals);
    byContext[row.key as UsageContext] += totals.pico;
    const model = row.model_id ?? "";
    byModel.set(model, plus(byModel.get(model) ?? ZERO, totals));
  }
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
    byContext: {
      customer: picoUsdToDecimal(byContext.customer),
      system: picoUsdToDecimal(byContext.system),
    },
    byModel: Object.fromEntries(
      [...byModel].map(([id, m]) => [
        id,
        { costUsd: picoUsdToDecimal(m.pico), count: wholeNumber(m.count) },
      ]),
    ),
  };
  if (groupBy !== undefined) summary.groups = await groupsJson(db, groups, groupBy);
  return summary;
}
