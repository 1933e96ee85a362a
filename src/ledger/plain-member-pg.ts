/**
 * PostgreSQL's plain debit of an account in a tree (docs/design.md#pools-and-members; the rule
 * and SQLite's form: plain-member.ts): one call of `ledger_plain_member_debit`
 * (sql/postgres/functions/), which locks the spender's path in the general path's order,
 * decides with the admission rule's generated functions and writes what the general path
 * writes, for the caller's guess of each level's limits (`TreeGuess`, src/db/seen-limits.ts);
 * a wrong guess changes nothing and is answered with the stored limits.
 */
import { type Kysely, sql } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import type { LimitsGuess, TreeGuess } from "../db/seen-limits.ts";
import type { PlainDebitCall, PlainDebitRow } from "../db/write-path.ts";
import { pgArray } from "../limits/plain.ts";
import { limitPlan } from "../limits/plan.ts";
import { slotOfLimit } from "../limits/slots.ts";
import { type PlainDebited, pgDebited, type UnheldDebit } from "./debit.ts";

/** What `ledger_plain_member_debit` answers. */
export type MemberDebitRow = PlainDebitRow & {
  pool_id: string | null;
  grant_seq: number | null;
  stored_path: (string | null)[] | null;
};

/** The limit arguments of `ledger_plain_member_debit`, each a PostgreSQL array's text. */
type PathLimitArgs = Record<
  "path" | "levels" | "slots" | "starts" | "ends" | "amounts" | "softs",
  string
>;

/** The plain debit's arguments (as `ledger_plain_debit` takes them), with the path's limits. */
type MemberArgs = DebitArgs & PathLimitArgs;

/** What a plain debit's call passes of the debit: its account, amount, entry and time. */
type DebitArgs = PlainDebitCall<unknown>["args"] & { nowMs: number };

/** The call of `ledger_plain_member_debit`. */
export const pgPlainMemberDebit = prepared<MemberArgs, MemberDebitRow>((db, arg) => ({
  compile: () =>
    sql<MemberDebitRow>`SELECT * FROM ledger_plain_member_debit(${arg("projectId")}, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("description")}, ${arg("metadata")}, ${arg("source")}, ${arg("path")}::text[], ${arg("levels")}::int[], ${arg("slots")}::int[], ${arg("starts")}::bigint[], ${arg("ends")}::bigint[], ${arg("amounts")}::bigint[], ${arg("softs")}::boolean[])`.compile(
      db,
    ),
}));

/** A guess's limit arguments, valid at the instants [fromMs, untilMs). */
const pathArgs = new WeakMap<TreeGuess, { fromMs: number; untilMs: number; args: PathLimitArgs }>();

/**
 * The limit arguments of `ledger_plain_member_debit` for the path guess `guess` at `nowMs`:
 * every limit of every level, flattened (its level, its slot in that level's row, its window,
 * amount and softness), made once per guess while the windows of all its levels last
 * (src/limits/plan.ts).
 */
export function memberLimitArgs(guess: TreeGuess, nowMs: number): PathLimitArgs {
  const cached = pathArgs.get(guess);
  if (cached !== undefined && nowMs >= cached.fromMs && nowMs < cached.untilMs) return cached.args;
  const levels: number[] = [];
  const slots: number[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const amounts: number[] = [];
  const softs: boolean[] = [];
  let fromMs = Number.NEGATIVE_INFINITY;
  let untilMs = Number.POSITIVE_INFINITY;
  guess.path.forEach((text, level) => {
    if (text === null) return;
    const plan = limitPlan(text, nowMs);
    fromMs = Math.max(fromMs, plan.fromMs);
    untilMs = Math.min(untilMs, plan.untilMs);
    plan.limits.forEach((limit, i) => {
      levels.push(level);
      slots.push(slotOfLimit(plan.limits, i));
      starts.push(plan.limitWindows[i]?.startMs ?? 0);
      ends.push(plan.limitWindows[i]?.endMs ?? 0);
      amounts.push(limit.amountMicros);
      softs.push(limit.soft);
    });
  });
  const args = {
    path: pgArray(guess.path),
    levels: pgArray(levels),
    slots: pgArray(slots),
    starts: pgArray(starts),
    ends: pgArray(ends),
    amounts: pgArray(amounts),
    softs: pgArray(softs),
  };
  pathArgs.set(guess, { fromMs, untilMs, args });
  return args;
}

/**
 * The plain debit `debit` of an account in a tree on PostgreSQL: one call of
 * `ledger_plain_member_debit` for the path guess `guess` (committed by itself outside a
 * transaction), with the arguments `args` of the debit's plain call (its entry's id and text,
 * as plain-debit.ts `pgDebitArgs` makes them) at `args.nowMs`.
 * @returns `applied` and what it did, or the guess its answer implies (nothing changed)
 */
export async function pgMemberDebit(
  db: Kysely<DB>,
  debit: UnheldDebit,
  args: DebitArgs,
  guess: TreeGuess,
): Promise<{ done: PlainDebited } | { next: LimitsGuess | null | undefined }> {
  const call = { ...args, ...memberLimitArgs(guess, args.nowMs) };
  const row = (await db.executeQuery(pgPlainMemberDebit(db, call))).rows[0];
  if (row === undefined) return { next: undefined };
  if (row.outcome !== "applied" || row.pool_id === null) {
    const next = row.stored_path === null ? row.stored_limits : { path: row.stored_path };
    return { next };
  }
  const grantSeq = row.grant_seq === null ? null : Number(row.grant_seq);
  const booked = { poolId: row.pool_id, grantSeq };
  return { done: pgDebited(debit, args.txnId, args.nowMs, row, booked) };
}
