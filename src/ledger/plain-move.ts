/**
 * SQLite's plain move of a debit (docs/design.md#plain-writes): one conditional `UPDATE …
 * RETURNING` of the account whose WHERE is the admission rule's plain region
 * (src/admission/rule.ts `plainDebit`) built on the account's terms (src/accounts/plain.ts) and
 * its first grant in spending order (grants.ts); for an account with spend limits, each limit's
 * plain region too, and its SET adds the debit to the account's counters (src/limits/plain.ts,
 * slots.ts); for a usage charge, a further condition of its own (`MoveGuard`). When the account
 * moves, the entry and the drawdown follow as on the general path (core.ts `appendEntry`); when
 * not, nothing has changed and the write takes the general path. The queue's one writer runs
 * nothing between these statements, so they need no lock.
 */
import { type ExpressionBuilder, expressionBuilder, sql, type Transaction } from "kysely";
import { accountTerms, heldOf } from "../accounts/plain.ts";
import { inSql, plainDebit, type SqlCondition } from "../admission/rule.ts";
import { type Arg, type Prepared, prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import {
  type LimitArgs,
  type LimitShape,
  limitConditions,
  type SqliteLimited,
} from "../limits/plain.ts";
import { slotSets } from "../limits/slots.ts";
import { appendEntry, type EntryInput, type Moved, type PostedEntry } from "./core.ts";
import { drawDown, firstGrantRemaining } from "./grants.ts";

/** The values of a guard's condition, by name. */
export type GuardArgs = Record<string, string | number | null>;

/**
 * A condition that the plain move also requires, in the same statement, so that the debit and
 * what its caller read earlier stay one decision: the usage charge's "the prices are still those
 * it was priced at" (src/usage/plain-charge.ts). Made once per kind (`moveGuard`); its values are
 * given per move (`Guarded`).
 */
export interface MoveGuard<G extends GuardArgs> {
  condition: (eb: ExpressionBuilder<DB, "accounts">, arg: Arg<MoveArgs & G>) => SqlCondition;
  /** The guard's move statements, one per account reference and limits shape. */
  statements: Map<string, Prepared<MoveArgs & G, Moved>>;
}

/** A guard with its values for one move. */
export interface Guarded<G extends GuardArgs> {
  guard: MoveGuard<G>;
  args: G;
}

/** A guard of the condition `condition` (see `MoveGuard`). */
export function moveGuard<G extends GuardArgs>(condition: MoveGuard<G>["condition"]): MoveGuard<G> {
  return { condition, statements: new Map() };
}

/** How a debit's plain move names its account and what it checks beyond the rule. */
export interface PlainMove<G extends GuardArgs> {
  /** The entry's `accountId` is the account's externalId (else its internal id). */
  byExternalId: boolean;
  /** What the debit lowers `available` by: its amount beyond the hold it settles (micro-credits). */
  neededMicros: number;
  /** The account's limits as the move checks them (none: the account must have none). */
  limited?: SqliteLimited | undefined;
  guarded?: Guarded<G> | undefined;
}

/** A plain debit posted: the entry and the account's externalId. */
export type PlainPosted = PostedEntry & { externalId: string };

/** The move statement's arguments (micro-credits, epoch ms). */
export type MoveArgs = {
  projectId: string;
  /** The account's internal id or externalId. */
  accountRef: string;
  amountMicros: number;
  neededMicros: number;
  nowMs: number;
  /** The limited move's: the account's stored limits text. */
  limits: string | null;
} & LimitArgs;

/**
 * The plain move of the debit `input` (its `accountId` read as `plain` says) and, when it
 * moved, its entry and drawdown.
 * @returns the entry and the account's externalId, or null (nothing changed): not plain
 * @throws Error (a bug) on a negative or unsafe amount
 */
export async function plainPost<G extends GuardArgs>(
  trx: Transaction<DB>,
  input: EntryInput,
  plain: PlainMove<G>,
): Promise<PlainPosted | null> {
  if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) {
    throw new Error(`ledger invariant: entry amount ${input.amountMicros}`);
  }
  const column = plain.byExternalId ? "external_id" : "id";
  const { limited, guarded } = plain;
  const args: MoveArgs = {
    projectId: input.projectId,
    accountRef: input.accountId,
    amountMicros: input.amountMicros,
    neededMicros: plain.neededMicros,
    nowMs: input.nowMs,
    limits: limited?.text ?? null,
    ...limited?.args,
  };
  const statement =
    guarded === undefined
      ? cachedMove(unguarded, column, limited?.shape, limited?.shapeKey)(trx, args)
      : cachedMove(
          guarded.guard.statements,
          column,
          limited?.shape,
          limited?.shapeKey,
          guarded.guard,
        )(trx, { ...args, ...guarded.args });
  const moved = (await trx.executeQuery(statement)).rows[0];
  if (moved === undefined) return null;
  const posted = await appendEntry(trx, input, moved);
  return { ...posted, externalId: moved.external_id };
}

/**
 * The plain move of a run of debits on one account (docs/design.md#batches): the account named
 * by `ref` gives `totalMicros`, the sum of the run's debits, only when that sum is plain (a sum
 * of debits is plain only when each of them, applied in order, is: plain-run.ts), and its first
 * grant in spending order gives it too. The run's entries are inserted by the caller.
 * @returns the account, its balance after the whole sum and the grant every debit of the run
 *   drew from (null: a sum of 0), or null (nothing changed)
 */
export async function plainRunMove(
  trx: Transaction<DB>,
  run: { projectId: string; ref: string; byExternalId: boolean; totalMicros: number },
  nowMs: number,
): Promise<(Moved & { grantSeq: number | null }) | null> {
  const { projectId, ref, byExternalId, totalMicros } = run;
  const move = cachedMove(unguarded, byExternalId ? "external_id" : "id", undefined, undefined);
  const args = {
    projectId,
    accountRef: ref,
    amountMicros: totalMicros,
    neededMicros: totalMicros,
    nowMs,
    limits: null,
  };
  const moved = (await trx.executeQuery(move(trx, args))).rows[0];
  if (moved === undefined) return null;
  // The first grant covers the sum (the rule's `firstGrantCovers`), so it is one draw.
  const [draw] = await drawDown(trx, moved.id, totalMicros);
  return { ...moved, grantSeq: draw?.grantSeq ?? null };
}

/** The move statements without a guard, one per account reference and limits shape. */
const unguarded = new Map<string, Prepared<MoveArgs & Record<never, never>, Moved>>();

/** The move statement of `cache` for the reference `column` and the limits `shape`, prepared once. */
function cachedMove<G extends GuardArgs>(
  cache: Map<string, Prepared<MoveArgs & G, Moved>>,
  column: "id" | "external_id",
  shape: LimitShape | undefined,
  shapeKey: string | undefined,
  guard?: MoveGuard<G>,
): Prepared<MoveArgs & G, Moved> {
  const key = `${column} ${shapeKey ?? ""}`;
  let move = cache.get(key);
  if (move === undefined) {
    move = moveStatement<G>(column, shape, guard);
    cache.set(key, move);
  }
  return move;
}

/**
 * The plain move naming the account by `column`, for an account whose limits have `shape` (none:
 * the account must have no limits) and with `guard`'s condition (see the module comment).
 */
function moveStatement<G extends GuardArgs>(
  column: "id" | "external_id",
  shape: LimitShape | undefined,
  guard: MoveGuard<G> | undefined,
): Prepared<MoveArgs & G, Moved> {
  return prepared<MoveArgs & G, Moved>((db, arg) => {
    let update = db.updateTable("accounts").set((eb) => ({
      balance_micros: eb("balance_micros", "-", arg("amountMicros")),
      updated_at_ms: arg("nowMs"),
    }));
    const slots = shape?.slots ?? 0;
    for (const [slotColumn, value] of slotSets(
      slots,
      (j) => arg(`slot${j}Start`),
      arg("amountMicros"),
    )) {
      update = update.set(slotColumn, value);
    }
    // The account's holds, summed once in a joined one-row table (`heldOf`), however often
    // the rule reads them.
    const held = heldOf(db, column, {
      projectId: arg("projectId"),
      ref: arg("accountRef"),
      nowMs: arg("nowMs"),
    });
    return update
      .from(held.as("h"))
      .where("accounts.project_id", "=", arg("projectId"))
      .where(`accounts.${column}`, "=", arg("accountRef"))
      .where(() => {
        const eb = expressionBuilder<DB, "accounts">();
        const account = accountTerms(
          arg("nowMs"),
          shape === undefined ? undefined : arg("limits"),
          sql.ref<number>("h.held"),
        );
        const needed = eb.val(arg("neededMicros"));
        const rule = plainDebit(inSql, {
          ...account,
          needed,
          drawn: eb.val(arg("amountMicros")),
          firstRemaining: sql<number | null>`(${firstGrantRemaining(eb)})`,
        });
        const limits =
          shape === undefined
            ? []
            : limitConditions(eb, shape, (name) => arg(name), account.held, needed);
        const guarded = guard === undefined ? [] : [guard.condition(eb, arg)];
        return eb.and([rule, ...limits, ...guarded]);
      })
      .returning([
        "accounts.id",
        "accounts.external_id",
        "accounts.balance_micros",
        "accounts.updated_at_ms",
      ]);
  });
}
