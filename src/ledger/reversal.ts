/**
 * Reversals (docs/api.md#reversals): a refund or a correction booked as a transaction of the
 * opposite type that names the one it reverses, on the general path only. The original is never
 * changed; what has been reversed of it is the sum of its reversals, read under the account's
 * lock (the write unit's: its row lock on PostgreSQL, the one writer on SQLite), so that the
 * reversals of one transaction never add up to more than its amount, whatever the concurrency.
 *
 * - A debit's reversal (a credit) gives the credits back to the grants the debit drew from
 *   (grants.ts `drawsOf`), the last drawn first, each at most what the debit took from it: which
 *   part of each draw earlier reversals gave back follows from their sum alone (`returnsFor`).
 *   A part given to a grant already past its expiry is removed again at once by the expiry
 *   rules (expiry.ts `bookDueExpiries`, which books it as any expiry). A debit booked before
 *   draws were recorded gives its credits back as one new grant (priority 50, no expiry). A
 *   spending debit's reversal also stops counting in the window it was booked in
 *   (src/limits/counters.ts `unspend`).
 * - A credit's reversal (a debit) takes the credits back from the grant that credit made, at
 *   most its `remaining` and the account's `available`. It is not spending.
 *
 * Amounts in micro-credits.
 */
import { z } from "@hono/zod-openapi";
import type { Kysely, Transaction } from "kysely";
import { findAccount, findAccountWithBalance } from "../accounts/lookup.ts";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { fundedByParent } from "../accounts/placement.ts";
import { pathUp } from "../accounts/spending.ts";
import type { DB, TransactionRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { ex } from "../http/examples.ts";
import { SPENDING_SOURCES, unspend } from "../limits/counters.ts";
import { fromMicros } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import { type GrantReturn, type PostedEntry, postEntry } from "./core.ts";
import { bookDueExpiries, expiryAccount } from "./expiry.ts";
import { type Draw, drawsOf } from "./grants.ts";

/** The sources of transactions that cannot be reversed: expiries, transfers and reversals. */
const NOT_REVERSIBLE = new Set(["plan_expiry", "grant_expiry", "reversal", "transfer"]);

/** What a reversal request asks (docs/api.md#reversals). */
export interface ReversalInput {
  transactionId: string;
  /** Micro-credits; undefined: all that is still reversible. */
  amountMicros?: number | undefined;
  description?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** A reversal booked. */
export interface Reversed {
  account: { id: string; external_id: string };
  /** The reversal's entry. */
  row: PostedEntry;
  original: TransactionRow;
  /** The original's reversals so far, this one included. */
  amountReversedMicros: number;
  /** What may still be reversed of the original after this one. */
  reversibleMicros: number;
  balanceMicros: number;
  availableMicros: number;
}

const original = (db: Kysely<DB>, projectId: string, id: string) =>
  db
    .selectFrom("transactions")
    .selectAll()
    .where("id", "=", id)
    .where("project_id", "=", projectId)
    .executeTakeFirst();

/**
 * The original's reversals so far (micro-credits): the sum of the transactions that name it.
 * Read inside the unit that holds its account, it is exact for the reversal that follows.
 */
export async function reversedMicros(db: Kysely<DB>, transactionId: string): Promise<number> {
  const row = await db
    .selectFrom("transactions")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("amount_micros"), eb.lit(0)).as("sum"))
    .where("reversal_of", "=", transactionId)
    .executeTakeFirst();
  return Number(row?.sum ?? 0);
}

/**
 * Each transaction of `ids` → what its reversals add up to (micro-credits; absent: none); with
 * `maxSeq`, only the reversals of `seq` at most that (an export's bound).
 */
export async function reversedSums(
  db: Kysely<DB>,
  ids: readonly string[],
  maxSeq?: number | undefined,
): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  let query = db
    .selectFrom("transactions")
    .select((eb) => ["reversal_of", eb.fn.sum<number>("amount_micros").as("sum")] as const)
    .where("reversal_of", "in", ids);
  if (maxSeq !== undefined) query = query.where("seq", "<=", maxSeq);
  const rows = await query.groupBy("reversal_of").execute();
  return new Map(
    rows.flatMap((r) => (r.reversal_of === null ? [] : [[r.reversal_of, Number(r.sum)]])),
  );
}

/**
 * What a debit's reversal of `micros` gives back to each of the debit's `draws` (in the order
 * drawn) when its earlier reversals add up to `beforeMicros`: the draws are given back last
 * drawn first, each at most what was taken from it, so earlier reversals filled the last ones.
 * @returns the returns, each > 0, summing to `micros` (a bug when the draws cannot hold it)
 */
export function returnsFor(
  draws: readonly Draw[],
  beforeMicros: number,
  micros: number,
): GrantReturn[] {
  const out: GrantReturn[] = [];
  let skip = beforeMicros;
  let left = micros;
  for (let i = draws.length - 1; i >= 0 && left > 0; i--) {
    const draw = draws[i];
    if (draw === undefined) continue;
    const given = Math.min(skip, draw.takenMicros);
    skip -= given;
    const room = draw.takenMicros - given;
    const back = Math.min(room, left);
    if (back > 0) {
      out.push({ grantSeq: draw.grantSeq, micros: back });
      left -= back;
    }
  }
  if (left > 0) throw new Error(`ledger invariant: the draws cannot take ${left} back`);
  return out;
}

/** 409 for a request beyond what may be reversed, with `details.reversible` (credits). */
function beyond(
  code: "REVERSAL_EXCEEDS_ORIGINAL" | "REVERSAL_EXCEEDS_REMAINING",
  reversible: number,
) {
  const message =
    code === "REVERSAL_EXCEEDS_ORIGINAL"
      ? "The reversals would pass the original's amount"
      : "More than can still be reversed";
  return new ApiError(code, message, { reversible: fromMicros(reversible) });
}

/**
 * Books the reversal `input` of one of project `projectId`'s transactions at `nowMs`, inside the
 * write unit `trx` (see the module comment).
 * @throws ApiError TRANSACTION_NOT_FOUND; NOT_REVERSIBLE (an expiry or a reversal);
 *   REVERSAL_EXCEEDS_ORIGINAL, REVERSAL_EXCEEDS_REMAINING (`details.reversible`);
 *   BALANCE_LIMIT_EXCEEDED (a debit's reversal past 9e9 credits); FUNDED_BY_PARENT (the
 *   original's account is now funded by its parent)
 */
export async function reverseTransaction(
  trx: Transaction<DB>,
  projectId: string,
  input: ReversalInput,
  nowMs: number,
): Promise<Reversed> {
  const done = await reverse(trx, projectId, input, nowMs, false);
  if (done === undefined) throw new Error("a reversal of an exact amount booked nothing");
  return done;
}

/**
 * Reverses as much of the credit or debit `transactionId` as may still be reversed, at most
 * `atMostMicros` (a Stripe refund's clawback, docs/api.md#selling-credits-through-stripe): the
 * reversal of `reverseTransaction` for the least of the two.
 * @returns the reversal, or undefined when nothing of it may be reversed (nothing was booked
 *   but the account's due expiries)
 * @throws as `reverseTransaction`, but never REVERSAL_EXCEEDS_ORIGINAL or _REMAINING
 */
export function reverseAtMost(
  trx: Transaction<DB>,
  projectId: string,
  input: ReversalInput & { amountMicros: number },
  nowMs: number,
): Promise<Reversed | undefined> {
  return reverse(trx, projectId, input, nowMs, true);
}

async function reverse(
  trx: Transaction<DB>,
  projectId: string,
  input: ReversalInput,
  nowMs: number,
  atMost: boolean,
): Promise<Reversed | undefined> {
  const txn = await original(trx, projectId, input.transactionId);
  if (txn === undefined) {
    throw new ApiError("TRANSACTION_NOT_FOUND", `Transaction ${input.transactionId} not found`);
  }
  if (NOT_REVERSIBLE.has(txn.source) || txn.reversal_of !== null || txn.transfer_id !== null) {
    throw new ApiError("NOT_REVERSIBLE", `A ${txn.source.replace("_", " ")} cannot be reversed`);
  }
  // A member's debit: its path is locked upwards first, as every write of the member locks it
  // (src/accounts/spending.ts), which takes the pool's lock on the way.
  if (txn.on_behalf_of !== null) {
    await pathUp(trx, await findAccount(trx, projectId, txn.on_behalf_of));
  }
  // The account's lock first: every reversal of this transaction waits here for the one before.
  const found = await findAccountWithBalance(trx, projectId, txn.account_id, nowMs);
  if (found.account.funding === "parent") {
    // Its credits would have to go to its pool (docs/api.md#pools-and-members, known limits):
    // refused, changing nothing, rather than give credits to an account that holds none.
    throw fundedByParent(found.account, "a reversal would credit it; reverse before the switch");
  }
  const due = await bookDueExpiries(trx, expiryAccount(found), nowMs);
  const availableMicros = found.available - due.expiredMicros;
  const before = await reversedMicros(trx, txn.id);
  const leftOfOriginal = txn.amount_micros - before;
  const grant = txn.type === "credit" ? await creditGrant(trx, txn.id) : undefined;
  const reversible =
    txn.type === "debit"
      ? leftOfOriginal
      : Math.max(0, Math.min(leftOfOriginal, grant?.remaining ?? leftOfOriginal, availableMicros));
  const micros = atMost
    ? Math.min(input.amountMicros ?? reversible, reversible)
    : (input.amountMicros ?? reversible);
  if (atMost && micros <= 0) return undefined;
  if (micros > leftOfOriginal || (input.amountMicros === undefined && leftOfOriginal === 0)) {
    throw beyond("REVERSAL_EXCEEDS_ORIGINAL", reversible);
  }
  if (micros > reversible || micros === 0) throw beyond("REVERSAL_EXCEEDS_REMAINING", reversible);
  const entry = {
    projectId,
    accountId: found.account.id,
    amountMicros: micros,
    description: input.description ?? "",
    metadata: input.metadata ?? {},
    source: "reversal" as const,
    reversalOf: txn.id,
    onBehalfOf: txn.on_behalf_of,
    nowMs,
    spendable: due.spendable,
  };
  let row: PostedEntry;
  if (txn.type === "debit") {
    const draws = await drawsOf(trx, txn);
    // A debit booked before draws were recorded: one new grant of the default terms.
    const returns = draws.length === 0 ? undefined : returnsFor(draws, before, micros);
    row = await postEntry(trx, { ...entry, type: "credit", returns });
    if ((SPENDING_SOURCES as readonly string[]).includes(txn.source)) {
      await unspendLevels(trx, txn, micros);
    }
  } else {
    row = await postEntry(trx, { ...entry, type: "debit", fromGrantSeq: grant?.seq });
  }
  // Credits given back to a grant already past its expiry are removed again at once.
  const after = await bookDueExpiries(trx, { projectId, accountId: found.account.id }, nowMs);
  const expired = due.expiredMicros + after.expiredMicros;
  const lowered = txn.type === "debit" ? expired - micros : expired + micros;
  const lastExpiry = after.expiries.at(-1);
  await checkLowBalance(trx, found.account, {
    nowMs,
    loweredByMicros: lowered,
    transactionId: txn.type === "credit" || lastExpiry === undefined ? row.id : lastExpiry.id,
    onBehalfOf: txn.on_behalf_of,
  });
  const balanceMicros = row.balance_after_micros - after.expiredMicros;
  const available =
    availableMicros + (txn.type === "debit" ? micros : -micros) - after.expiredMicros;
  const amountReversedMicros = before + micros;
  const left = txn.amount_micros - amountReversedMicros;
  const reversibleMicros =
    txn.type === "debit"
      ? left
      : Math.max(
          0,
          Math.min(left, grant === undefined ? left : grant.remaining - micros, available),
        );
  await transactionReversed.emit(trx, {
    projectId,
    nowMs,
    data: {
      accountId: found.account.id,
      externalId: found.account.external_id,
      onBehalfOf: txn.on_behalf_of,
      transactionId: row.id,
      reversedTransactionId: txn.id,
      type: row.type,
      amount: fromMicros(micros),
      amountReversed: fromMicros(amountReversedMicros),
      balance: fromMicros(balanceMicros),
    },
  });
  return {
    account: found.account,
    row,
    original: txn,
    amountReversedMicros,
    reversibleMicros,
    balanceMicros,
    availableMicros: available,
  };
}

/**
 * Takes a reversed spending debit's `micros` out of the counters of every level that counted it
 * (docs/api.md#pools-and-members): its spender (the member it was booked on behalf of, else its
 * account) and the levels above the spender when it was booked (`spend_levels`), each found (and
 * on PostgreSQL locked) in the unit, spender first.
 */
async function unspendLevels(trx: Transaction<DB>, txn: TransactionRow, micros: number) {
  const levels = await trx
    .selectFrom("spend_levels")
    .select("account_id")
    .where("transaction_id", "=", txn.id)
    .execute();
  const ids = [txn.on_behalf_of ?? txn.account_id, ...levels.map((l) => l.account_id)];
  for (const id of ids) {
    const level = await findAccount(trx, txn.project_id, id);
    await unspend(trx, level, txn.created_at_ms, micros);
  }
}

/** The grant the credit `transactionId` made, with what remains of it (none: a credit made before grants). */
async function creditGrant(db: Kysely<DB>, transactionId: string) {
  const row = await db
    .selectFrom("credit_grants as g")
    .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq")
    .select(["g.seq", "r.remaining_micros"])
    .where("g.transaction_id", "=", transactionId)
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : { seq: Number(row.seq), remaining: Number(row.remaining_micros) };
}

/** The `data` of `transaction.reversed` (docs/api.md#event-types). */
export const transactionReversedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    onBehalfOf: z
      .string()
      .nullable()
      .openapi({ description: "The member that spent (null: none)" }),
    transactionId: z.string().openapi({ description: "The reversal", example: ex.deductTxnId }),
    reversedTransactionId: z
      .string()
      .openapi({ description: "The original", example: ex.confirmTxnId }),
    type: z.enum(["credit", "debit"]).openapi({ description: "The reversal's type" }),
    amount: z.number().openapi({ description: "The reversal's credits", example: 2.5 }),
    amountReversed: z
      .number()
      .openapi({ description: "The original's reversals so far, this one included", example: 2.5 }),
    balance: z.number().openapi({ description: "Credits after the reversal", example: 16.04 }),
  })
  .openapi("TransactionReversedData");

/** The `transaction.reversed` event: a reversal was booked. */
export const transactionReversed = defineEvent("transaction.reversed", transactionReversedData);
