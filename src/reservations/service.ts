/**
 * Reservations (holds) and their one-time ending (docs/api.md#endpoints, docs/api.md#reservations): a pending hold
 * ends exactly once, as confirmed (posted), cancelled (voided) or expired. A hold stops counting
 * in `reserved` at its expiresAt whether or not the sweeper has marked it.
 */
import type { Kysely, Transaction } from "kysely";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { findSpender, inTree, namedPool, spendingOf, spendLevels } from "../accounts/spending.ts";
import type { AccountListOptions } from "../db/account-list.ts";
import { countedPage } from "../db/paging.ts";
import { argValues, prepared } from "../db/prepared.ts";
import { forUpdateOnPostgres, forUpdateSkipLockedOnPostgres } from "../db/row-locks.ts";
import type { DB, ReservationRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import type { PostedEntry } from "../ledger/core.ts";
import { requireAvailable } from "../ledger/core.ts";
import { endHold } from "../ledger/debit.ts";
import { bookDueExpiries, type DueExpiries, expiryAccount } from "../ledger/expiry.ts";
import { generalDebit } from "../ledger/service.ts";
import { limitHold } from "../limits/enforce.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import { confirmDebit, confirmEntry } from "./confirm-debit.ts";
import { NEW_HOLD_COLUMNS, type PlainHold } from "./plain-reserve.ts";
import { effectiveStatus, reservationJson, reservationSchema } from "./schemas.ts";

/** The `reservation.expired` event: its `data` is the Reservation object. */
export const reservationExpired = defineEvent("reservation.expired", reservationSchema);

/** Every column of a reservation: a new hold's, and those set when it ends. */
const RESERVATION_COLUMNS = [
  ...NEW_HOLD_COLUMNS,
  "settled_at_ms",
  "actual_micros",
  "transaction_id",
] as const satisfies readonly (keyof ReservationRow)[];

const insertReservation = prepared<ReservationRow, unknown>((db, arg) =>
  db.insertInto("reservations").values(argValues(arg, RESERVATION_COLUMNS)),
);

/**
 * A reservation by id. On PostgreSQL it is read `FOR UPDATE` (it is only read to be settled):
 * a second confirm or cancel, or the sweeper, waits for the first to commit and then sees the
 * hold ended, so a hold ends exactly once across processes.
 */
const reservationById = prepared<{ projectId: string; reservationId: string }, ReservationRow>(
  (db, arg) =>
    forUpdateOnPostgres(
      db,
      db
        .selectFrom("reservations")
        .selectAll()
        .where("id", "=", arg("reservationId"))
        .where("project_id", "=", arg("projectId")),
    ),
);

export interface CreateReservationInput {
  accountRef: string;
  amountMicros: number;
  operation?: string | undefined;
  model?: string | undefined;
  ttlSeconds: number;
  metadata?: Record<string, unknown> | undefined;
}

/**
 * The hold a reservation of `input` stores at `nowMs` (its account aside): pending until
 * now + ttl, with `operation` and `model` in its metadata, and the text of the entry that will
 * confirm it (`confirmEntry`).
 */
export function newHold(
  projectId: string,
  input: CreateReservationInput,
  id: string,
  nowMs: number,
): PlainHold {
  const metadata: Record<string, unknown> = { ...input.metadata };
  if (input.operation !== undefined) metadata.operation = input.operation;
  if (input.model !== undefined) metadata.model = input.model;
  const hold = { id, amount_micros: input.amountMicros, metadata: stringifyJson(metadata) };
  const confirm = confirmEntry(hold);
  return {
    ...hold,
    project_id: projectId,
    status: "pending",
    created_at_ms: nowMs,
    expires_at_ms: nowMs + input.ttlSeconds * 1000,
    settled_at_ms: null,
    actual_micros: null,
    transaction_id: null,
    confirm_description: confirm.description,
    confirm_metadata: confirm.metadata,
  };
}

/**
 * Holds `amountMicros` of the account's available credits until now + ttl, on the general path
 * (the route's plain path, plain-reserve.ts, is tried first by the write path): books the
 * account's due expiries first, applies its spend limits (src/limits/enforce.ts) and checks the
 * low-balance threshold after.
 * @throws ApiError ACCOUNT_NOT_FOUND, INSUFFICIENT_CREDITS (amount > available),
 *   SPEND_LIMIT_EXCEEDED
 */
export async function createReservation(
  trx: Transaction<DB>,
  projectId: string,
  input: CreateReservationInput,
  nowMs: number,
): Promise<ReservationRow> {
  const hold = newHold(projectId, input, newId("res"), nowMs);
  const spender = await findSpender(trx, projectId, input.accountRef, nowMs);
  const spending = await spendingOf(trx, spender, nowMs);
  const found = spending.payer;
  // Credits past their expiresAt are never reserved (docs/api.md#expiry-of-grants).
  const due = await bookDueExpiries(trx, expiryAccount(found), nowMs);
  requireAvailable(found.available - due.expiredMicros, input.amountMicros, namedPool(spending));
  await limitHold(trx, spendLevels(spending), {
    id: hold.id,
    amountMicros: input.amountMicros,
    nowMs,
    onBehalfOf: spending.onBehalfOf,
    inTree: inTree(spending),
  });
  // A member's hold names the member, and its pool's credits back it.
  const row: ReservationRow = { ...hold, account_id: spending.spender.id };
  await trx.executeQuery(insertReservation(trx, row));
  await checkLowBalance(trx, found.account, {
    nowMs,
    availableBeforeMicros: found.available,
    transactionId: null,
    onBehalfOf: spending.onBehalfOf,
  });
  return row;
}

/**
 * The project's reservation, pending and unexpired at `nowMs`.
 * @throws ApiError RESERVATION_NOT_FOUND; RESERVATION_NOT_PENDING with `details.status`
 */
async function pendingReservation(
  trx: Transaction<DB>,
  projectId: string,
  reservationId: string,
  nowMs: number,
): Promise<ReservationRow> {
  const row = (await trx.executeQuery(reservationById(trx, { projectId, reservationId }))).rows[0];
  if (!row) throw new ApiError("RESERVATION_NOT_FOUND", `Reservation ${reservationId} not found`);
  const status = effectiveStatus(row, nowMs);
  if (status !== "pending") {
    throw new ApiError("RESERVATION_NOT_PENDING", `Reservation is ${status}`, { status });
  }
  return row;
}

/** A confirm done: the hold, its debit, and the account's balance afterwards (micro-credits). */
export interface Confirmed {
  hold: ReservationRow;
  transaction: PostedEntry;
  balanceMicros: number;
}

/**
 * Settles a hold with the amount actually used (docs/api.md#reservations), on the general path
 * (the route's plain path, plain-confirm.ts, is tried first by the write path): debits
 * `actualMicros` (a debit transaction is always created, even for 0) and releases the rest; an
 * overage beyond the hold must fit in `available`, else 402 and the hold stays pending. The
 * account's due grant expiries are booked first, the debit spends first what is left of expired
 * grants, and what of that is uncovered afterwards is removed in the same unit
 * (docs/api.md#expiry-of-grants).
 * @returns the hold, its debit, and the account's balance afterwards (micro-credits)
 * @throws ApiError RESERVATION_NOT_FOUND, RESERVATION_NOT_PENDING, INSUFFICIENT_CREDITS
 */
export async function confirmReservation(
  trx: Transaction<DB>,
  projectId: string,
  reservationId: string,
  actualMicros: number,
  nowMs: number,
): Promise<Confirmed> {
  // The hold is locked (PostgreSQL) before the account: every unit that settles a hold does so.
  const hold = await pendingReservation(trx, projectId, reservationId, nowMs);
  const debit = confirmDebit(hold, actualMicros);
  const { row: transaction, found, due, spending } = await generalDebit(trx, debit, nowMs);
  const released = {
    balance: transaction.balance_after_micros,
    reserved: found.reserved - hold.amount_micros,
  };
  const removedMicros = await removeUncovered(trx, found.account, due, released, nowMs);
  await checkLowBalance(trx, found.account, {
    nowMs,
    availableBeforeMicros: found.available,
    transactionId: transaction.id,
    onBehalfOf: spending.onBehalfOf,
  });
  return { hold, transaction, balanceMicros: transaction.balance_after_micros - removedMicros };
}

/**
 * After a hold ended: removes what is left of expired grants as far as the released
 * `available` allows (docs/api.md#expiry-of-grants). Reads nothing more when no expired grant
 * had anything left.
 * @returns the micro-credits removed
 */
async function removeUncovered(
  trx: Transaction<DB>,
  account: { id: string; project_id: string },
  before: DueExpiries,
  after: { balance: number; reserved: number },
  nowMs: number,
): Promise<number> {
  if (before.spendable?.grants[0]?.expiry_booked !== 1) return 0;
  const { expiredMicros } = await bookDueExpiries(trx, expiryAccount({ account, ...after }), nowMs);
  return expiredMicros;
}

/**
 * Voids a pending hold: every held credit returns to `available` (docs/api.md#reservations).
 * The account's due grant expiries are booked first, and what is left of expired grants that no
 * hold covers any more is removed in the same unit (docs/api.md#expiry-of-grants).
 * @throws ApiError RESERVATION_NOT_FOUND, RESERVATION_NOT_PENDING
 */
export async function cancelReservation(
  trx: Transaction<DB>,
  projectId: string,
  reservationId: string,
  nowMs: number,
): Promise<ReservationRow> {
  const hold = await pendingReservation(trx, projectId, reservationId, nowMs);
  const spender = await findSpender(trx, projectId, hold.account_id, nowMs);
  // A member's hold is backed by its pool, whose credits it releases.
  const found = (await spendingOf(trx, spender, nowMs)).payer;
  const due = await bookDueExpiries(trx, expiryAccount(found), nowMs);
  await endHold(trx, hold.id, nowMs, {
    status: "cancelled",
    actualMicros: null,
    transactionId: null,
  });
  const released = {
    balance: found.balance - due.expiredMicros,
    reserved: found.reserved - hold.amount_micros,
  };
  await removeUncovered(trx, found.account, due, released, nowMs);
  await checkLowBalance(trx, found.account, {
    nowMs,
    availableBeforeMicros: found.available,
    transactionId: null,
  });
  return hold;
}

/** A page of an account's reservations, newest first; `activeOnly`: pending and unexpired. */
export async function listReservations(
  db: Kysely<DB>,
  accountId: string,
  options: AccountListOptions,
) {
  let base = db.selectFrom("reservations").where("account_id", "=", accountId);
  if (options.activeOnly) {
    base = base.where("status", "=", "pending").where("expires_at_ms", ">", options.nowMs);
  }
  return countedPage(
    base,
    (q) => q.orderBy("created_at_ms", "desc").orderBy("id", "desc"),
    options,
  );
}

/**
 * Marks up to `limit` pending holds whose expiresAt has passed as `expired` (the sweeper job),
 * with a `reservation.expired` event for each (docs/api.md#event-types). Their credits already
 * stopped counting at expiresAt; this only records the ending.
 * @returns how many were marked
 */
export async function expireReservations(trx: Transaction<DB>, nowMs: number, limit: number) {
  // On PostgreSQL, holds another transaction is settling (or another process's sweeper is
  // marking) are skipped, not waited for; the status guard holds for the rows it does take.
  const due = trx
    .selectFrom("reservations")
    .select("id")
    .where("status", "=", "pending")
    .where("expires_at_ms", "<=", nowMs)
    .limit(limit)
    .$call((q) => forUpdateSkipLockedOnPostgres(trx, q));
  const expired = await trx
    .updateTable("reservations")
    .set((eb) => ({ status: "expired", settled_at_ms: eb.ref("expires_at_ms") }))
    .where("id", "in", due)
    .where("status", "=", "pending")
    .returningAll()
    .execute();
  for (const row of expired) {
    await reservationExpired.emit(trx, {
      projectId: row.project_id,
      nowMs,
      data: reservationJson(row, nowMs),
    });
  }
  return expired.length;
}
