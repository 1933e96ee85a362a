/**
 * The limited plain debit (docs/design.md#spend-limits): a deduction or manual debit on an account
 * with limits in as few statements as the plain debit. It is made only when the account's stored
 * limits are the text it was built for, read in the same statement, and each limit is in its
 * plain region by the admission rule (`plainLimit`, src/admission/rule.ts): no limit refuses the
 * write and none is reached by it. Any other write changes nothing and takes the general path,
 * which applies the same rule on numbers (src/limits/enforce.ts, judge.ts). Both read and add to
 * the counters in the account's row (slots.ts). PostgreSQL: one call of
 * `ledger_plain_limited_debit` (sql/postgres/functions/). SQLite: the plain move with these
 * conditions, whose SET also adds the debit to the counters (src/ledger/plain-move.ts). Both take
 * the windows and arguments of the account's limits text from a cache that holds until a window
 * ends (plan.ts). test/debit-equivalence.test.ts runs limited cases through both paths.
 */
import { type ExpressionBuilder, sql, type Transaction } from "kysely";
import { inSql, plainLimit, type SqlCondition, type SqlNumber } from "../admission/rule.ts";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { IN_TREE, type LimitsGuess } from "../db/seen-limits.ts";
import type { SpendSlot } from "../db/slot-columns.ts";
import type { PlainDebitRow as PgDebitRow, PlainDebitCall } from "../db/write-path.ts";
import { type LimitPlan, limitPlan } from "./plan.ts";
import { slotOfLimit, slotSpent } from "./slots.ts";

/**
 * The plain debit's arguments (as one call of a batch passes them), with the account's limits:
 * each list as the text of a PostgreSQL array (`pgArray`), which the statement casts.
 */
type Args = PlainDebitCall<unknown>["args"] & {
  nowMs: number;
  limits: string;
  slots: string;
  starts: string;
  ends: string;
  amounts: string;
  softs: string;
};

/**
 * The text of a PostgreSQL array of `values` (`{"a","b"}`, `{1,2}`, `{t,f}`, null as `NULL`),
 * each text quoted with `"` and `\` escaped: made once per plan, so the driver sends it as it is.
 */
export function pgArray(values: readonly (string | number | boolean | null)[]): string {
  const items = values.map((v) =>
    v === null
      ? "NULL"
      : typeof v === "string"
        ? `"${v.replace(/["\\]/g, "\\$&")}"`
        : typeof v === "number"
          ? String(v)
          : v
            ? "t"
            : "f",
  );
  return `{${items.join(",")}}`;
}

/** The call of `ledger_plain_limited_debit`. */
export const pgPlainLimitedDebit = prepared<Args, PgDebitRow>((db, arg) => ({
  compile: () =>
    sql<PgDebitRow>`SELECT * FROM ledger_plain_limited_debit(${arg("projectId")}, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("description")}, ${arg("metadata")}, ${arg("source")}, ${arg("limits")}, ${arg("slots")}::int[], ${arg("starts")}::bigint[], ${arg("ends")}::bigint[], ${arg("amounts")}::bigint[], ${arg("softs")}::boolean[])`.compile(
      db,
    ),
}));

/** PostgreSQL's limit arguments of the call (`ledger_plain_limited_debit`). */
type PgLimitArgs = Pick<Args, "limits" | "slots" | "starts" | "ends" | "amounts" | "softs">;

const pgArgs = new WeakMap<LimitPlan, PgLimitArgs>();

/**
 * The limit arguments of the call for the limits text `limits` at `nowMs`: made once per plan
 * (src/limits/plan.ts), so a request reuses them while its windows last.
 */
export function limitArgs(limits: string, nowMs: number): PgLimitArgs {
  const plan = limitPlan(limits, nowMs);
  let found = pgArgs.get(plan);
  if (found === undefined) {
    const list = plan.limits;
    const windows = plan.limitWindows;
    found = {
      limits,
      slots: pgArray(list.map((_, i) => slotOfLimit(list, i))),
      starts: pgArray(windows.map((w) => w.startMs)),
      ends: pgArray(windows.map((w) => w.endMs)),
      amounts: pgArray(list.map((l) => l.amountMicros)),
      softs: pgArray(list.map((l) => l.soft)),
    };
    pgArgs.set(plan, found);
  }
  return found;
}

/**
 * An account's limits as SQLite's limited move checks them: each limit's softness and counter
 * slot (slots.ts), in the order of its limits, and the number of slots the debit adds to (one
 * per distinct period and zone). One statement is prepared per shape.
 */
export interface LimitShape {
  limits: readonly { soft: boolean; slot: SpendSlot }[];
  slots: number;
}

/**
 * The named arguments of the limited move: `limit<i>Start` (limit i's window start, epoch ms),
 * `limit<i>Amount` (its amount, micro-credits), `slot<j>Start` (slot j's window start).
 */
export type LimitArgs = Record<
  `limit${number}Start` | `limit${number}Amount` | `slot${number}Start`,
  number
>;

/** SQLite's limited plain move: the limits text, its shape and its arguments at an instant. */
export interface SqliteLimited {
  text: string;
  shape: LimitShape;
  /** The shape's key among the prepared statements. */
  shapeKey: string;
  args: LimitArgs;
}

const sqliteArgs = new WeakMap<LimitPlan, SqliteLimited>();

/**
 * The limited move's arguments for the limits text `text` at `nowMs` (SQLite): made once per
 * plan (src/limits/plan.ts), so a request reuses them while its windows last.
 */
export function sqliteLimited(text: string, nowMs: number): SqliteLimited {
  const plan = limitPlan(text, nowMs);
  let found = sqliteArgs.get(plan);
  if (found === undefined) {
    const args: LimitArgs = {};
    plan.limits.forEach((l, i) => {
      args[`limit${i}Start`] = plan.limitWindows[i]?.startMs ?? 0;
      args[`limit${i}Amount`] = l.amountMicros;
    });
    plan.windows.forEach((w, j) => {
      args[`slot${j}Start`] = w.startMs;
    });
    const limits = plan.limits.map((l, i) => ({ soft: l.soft, slot: slotOfLimit(plan.limits, i) }));
    const shape = { limits, slots: plan.windows.length };
    found = { text, shape, shapeKey: JSON.stringify(shape), args };
    sqliteArgs.set(plan, found);
  }
  return found;
}

/**
 * SQLite's conditions of a limited plain debit on the account of a statement on `accounts`, for
 * limits of `shape`, whose arguments `arg` names (`LimitArgs`): each limit in its plain region
 * by the admission rule (`plainLimit`, src/admission/rule.ts: neither refusing the write nor
 * reached by it), with `held` the account's holds and `needed` what the write adds to spending.
 * A limit's spent is its slot's (slots.ts) when the slot counts the limit's current window,
 * else 0.
 */
export function limitConditions(
  eb: ExpressionBuilder<DB, "accounts">,
  shape: LimitShape,
  arg: (name: keyof LimitArgs) => number,
  held: SqlNumber,
  needed: SqlNumber,
): SqlCondition[] {
  return shape.limits.map(({ soft, slot }, i) => {
    const spent = slotSpent(eb, slot, arg(`limit${i}Start`));
    const amount = eb.val(arg(`limit${i}Amount`));
    return plainLimit(inSql, { spent, held, needed, amount }, soft);
  });
}

/** The stored limits text and tree links of the account whose `column` is `ref` in the project. */
const storedByColumn = (column: "id" | "external_id") =>
  prepared<{ projectId: string; ref: string }, { spend_limits: string | null; tree_links: number }>(
    (db, arg) =>
      db
        .selectFrom("accounts")
        .select(["spend_limits", "tree_links"])
        .where("project_id", "=", arg("projectId"))
        .where(column, "=", arg("ref")),
  );

const storedBy = { id: storedByColumn("id"), external_id: storedByColumn("external_id") };

/**
 * The guess of the limits stored for the account `ref` names (its internal id, or its externalId
 * when `byExternalId`), in the unit `trx` (src/db/seen-limits.ts): its limits text, or null when
 * it has none; `IN_TREE` when it is in a tree; undefined when there is no such account. SQLite's
 * plain debit reads it when its guess of the account's limits moved nothing.
 */
export async function storedLimits(
  trx: Transaction<DB>,
  projectId: string,
  ref: string,
  byExternalId: boolean,
): Promise<LimitsGuess | null | undefined> {
  const query = storedBy[byExternalId ? "external_id" : "id"](trx, { projectId, ref });
  const row = (await trx.executeQuery(query)).rows[0];
  if (row === undefined) return undefined;
  return row.tree_links > 0 ? IN_TREE : row.spend_limits;
}
