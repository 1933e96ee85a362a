/**
 * The limited plain debit (docs/design.md#spend-limits): a deduction or manual debit on an account
 * with limits in as few statements as the plain debit, when this process already knows the
 * account's limits (the general path remembers them, and the units that set them). It is made only
 * when the account's stored limits are still those, and every limit stays strictly below its
 * amount after it (or is soft and already reached): a write that no limit refuses and that reaches
 * none. Any other write changes nothing and takes the general path, which applies the rule
 * (src/limits/enforce.ts, judge.ts); the SQL here only recognises the writes the rule cannot
 * refuse. Both read and add to the counters in the account's row (slots.ts). PostgreSQL: one call
 * of `ledger_plain_limited_debit` (migrations 0011, 0015, 0017). SQLite: the plain move with these
 * conditions, whose SET also adds the debit to the counters (ledger/core.ts). Both take the
 * windows and arguments of the account's limits text from a cache that holds until a window ends
 * (plan.ts). test/debit-equivalence.test.ts runs limited cases through both paths.
 */
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import { heldExpression } from "../db/held.ts";
import { prepared } from "../db/prepared.ts";
import type { AccountRow, DB, SpendSlot } from "../db/schema.ts";
import type { PlainDebitRow as PgDebitRow, PlainDebitCall } from "../db/write-path.ts";
import { type LimitPlan, limitPlan } from "./plan.ts";
import { slotAt, slotOfLimit, slotSpent } from "./slots.ts";

/** Project and account reference (internal id or externalId) → the account's limits text. */
const known = new Map<string, string>();
const MAX_KNOWN = 100_000;

const keyOf = (projectId: string, ref: string) => `${projectId} ${ref}`;

/**
 * Records what a unit of the general path read of an account's limits, or what a unit that
 * created the account or set its limits wrote (accounts/service.ts), under both its names, so
 * that the next deduction naming it may try the limited plain debit (and forgets an account
 * without limits). A stale entry (a unit rolled back, another process changed the limits) is
 * harmless: the limited plain debit compares it with the stored limits.
 */
export function rememberLimits(
  account: Pick<AccountRow, "project_id" | "id" | "external_id" | "spend_limits">,
): void {
  const byId = keyOf(account.project_id, account.id);
  const byExternalId = keyOf(account.project_id, account.external_id);
  if (account.spend_limits === null) {
    if (known.size === 0) return;
    known.delete(byId);
    known.delete(byExternalId);
    return;
  }
  if (known.size >= MAX_KNOWN) known.clear();
  known.set(byId, account.spend_limits);
  known.set(byExternalId, account.spend_limits);
}

/** The limits text this process last saw for the account `ref` names, if any. */
export function knownLimits(projectId: string, ref: string): string | undefined {
  return known.get(keyOf(projectId, ref));
}

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
 * The text of a PostgreSQL array of `values` (`{"a","b"}`, `{1,2}`, `{t,f}`), each text quoted
 * with `"` and `\` escaped: made once per plan, so the driver sends it as it is.
 */
export function pgArray(values: readonly (string | number | boolean)[]): string {
  const items = values.map((v) =>
    typeof v === "string"
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

/** SQLite's limited plain move: the limits text and each limit's window, amount and softness. */
export interface SqliteLimited {
  text: string;
  /**
   * The statement's shape: each limit's softness ("h" hard, "s" soft) and counter slot
   * (slots.ts), in order, then `/` and the number of slots the debit adds to: `h0h1s2/3`.
   */
  shape: string;
  /** `l<i>s` (limit i's window start), `l<i>a` (its amount), `w<j>s` (slot j's window start). */
  args: Record<string, string | number>;
}

/** A shape's limits (softness and slot) and its number of slots (see `SqliteLimited`). */
export function shapeOf(shape: string): {
  limits: { soft: boolean; slot: SpendSlot }[];
  slots: number;
} {
  const [limitPart = "", slots = "0"] = shape.split("/");
  const limits = [];
  for (let i = 0; i < limitPart.length; i += 2) {
    limits.push({ soft: limitPart[i] === "s", slot: slotAt(Number(limitPart[i + 1])) });
  }
  return { limits, slots: Number(slots) };
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
    const args: Record<string, string | number> = {};
    plan.limits.forEach((l, i) => {
      args[`l${i}s`] = plan.limitWindows[i]?.startMs ?? 0;
      args[`l${i}a`] = l.amountMicros;
    });
    plan.windows.forEach((w, j) => {
      args[`w${j}s`] = w.startMs;
    });
    const limits = plan.limits.map((l, i) => `${l.soft ? "s" : "h"}${slotOfLimit(plan.limits, i)}`);
    const shape = `${limits.join("")}/${plan.windows.length}`;
    found = { text, shape, args };
    sqliteArgs.set(plan, found);
  }
  return found;
}

/**
 * SQLite's conditions of a limited plain debit on the account of a statement on `accounts`, for
 * limits of the `shape` of `SqliteLimited` named by its arguments: each limit stays strictly
 * below its amount after the write (spent + held + needed < amount), or is soft and already
 * reached (spent + held ≥ amount): the same conservative test as `ledger_plain_limited_debit`
 * (PostgreSQL, sql/postgres/functions/). A limit's spent is its slot's (slots.ts) when the slot
 * counts the limit's current window, else 0. The hard limits are tested at once, the holds read
 * once: held + needed < min(amount − spent).
 */
export function underLimits(
  eb: ExpressionBuilder<DB, "accounts">,
  arg: (name: string) => unknown,
  shape: string,
  nowMs: unknown,
  needed: unknown,
): Expression<SqlBool>[] {
  const held = heldExpression(eb, nowMs as number);
  const limits = shapeOf(shape).limits.map(({ soft, slot }, i) => {
    const spent = slotSpent(eb, slot, arg(`l${i}s`));
    return { soft, spent, amount: arg(`l${i}a`) };
  });
  const conditions = limits
    .filter((l) => l.soft)
    .map(
      (l) =>
        sql<SqlBool>`(${l.spent} + (${held}) + ${needed} < ${l.amount} OR ${l.spent} + (${held}) >= ${l.amount})`,
    );
  const rooms = limits.filter((l) => !l.soft).map((l) => sql<number>`${l.amount} - ${l.spent}`);
  const [first] = rooms;
  if (first === undefined) return conditions;
  // SQLite's min() of one argument is the aggregate: one hard limit is compared by itself.
  const least = rooms.length === 1 ? first : sql<number>`min(${sql.join(rooms)})`;
  return [sql<SqlBool>`(${held}) + ${needed} < ${least}`, ...conditions];
}
