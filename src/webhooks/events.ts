/**
 * The webhook events and their outbox (docs/api.md#event-types): every event is
 * `{id, type, createdAt, data}` and is written inside the write unit of the change that causes
 * it, together with one pending delivery per active endpoint of the project subscribed to its
 * type. So an event exists if and only if its cause committed, and the delivery worker
 * (src/webhooks/delivery.ts) finds it in the database however the process ends. An event that
 * no endpoint subscribes to is sent nowhere and not stored.
 *
 * The functions here are the hooks the writers call: `checkLowBalance` at the end of a write
 * that may lower an account's `available`, `emitReservationExpired`, `emitCreditsExpired` and
 * `emitPlanGranted` where those changes are booked.
 */
import type { Transaction } from "kysely";
import { findAccountWithBalance } from "../accounts/lookup.ts";
import type { DB, ReservationRow, TransactionRow, WebhookEventType } from "../db/schema.ts";
import { iso } from "../http/dates.ts";
import { newId } from "../ids.ts";
import { parseJsonText, stringifyJson } from "../json.ts";
import { fromMicros } from "../money.ts";
import { reservationJson } from "../reservations/service.ts";

/** Every event type, in the order the API lists them (a webhook's default subscription). */
export const EVENT_TYPES = [
  "balance.low",
  "reservation.expired",
  "credits.expired",
  "plan.granted",
] as const satisfies readonly WebhookEventType[];

export type EventType = (typeof EVENT_TYPES)[number];

/** The event types a stored `webhooks.events` column lists (unknown entries are dropped). */
export function parseEventTypes(text: string): EventType[] {
  const value = parseJsonText(text);
  if (!Array.isArray(value)) return [];
  return EVENT_TYPES.filter((type) => value.includes(type));
}

/** An event's `data`, or a function that reads it (called only when someone subscribes). */
type EventData = Record<string, unknown> | (() => Promise<Record<string, unknown>>);

/**
 * Writes one event and its pending deliveries inside the caller's write unit.
 * @param event.data the event's `data`; amounts as `ExactDecimal`s (written as exact literals)
 * @returns the event id, or null when no active endpoint of the project subscribes to `type`
 */
export async function emitEvent(
  trx: Transaction<DB>,
  event: { projectId: string; type: EventType; data: EventData; nowMs: number },
): Promise<string | null> {
  const hooks = await trx
    .selectFrom("webhooks")
    .select(["id", "events"])
    .where("project_id", "=", event.projectId)
    .where("deleted_at_ms", "is", null)
    .execute();
  const subscribed = hooks.filter((h) => parseEventTypes(h.events).includes(event.type));
  if (subscribed.length === 0) return null;
  const id = newId("evt");
  const data = typeof event.data === "function" ? await event.data() : event.data;
  const payload = stringifyJson({ id, type: event.type, createdAt: iso(event.nowMs), data });
  await trx
    .insertInto("webhook_events")
    .values({
      id,
      project_id: event.projectId,
      type: event.type,
      payload,
      created_at_ms: event.nowMs,
    })
    .execute();
  await trx
    .insertInto("webhook_deliveries")
    .values(
      subscribed.map((hook) => ({
        id: newId("whd"),
        project_id: event.projectId,
        webhook_id: hook.id,
        event_id: id,
        event_type: event.type,
        status: "pending" as const,
        attempts: 0,
        last_status_code: null,
        last_error: null,
        next_attempt_at_ms: event.nowMs,
        locked_until_ms: null,
        lease_token: null,
        created_at_ms: event.nowMs,
        delivered_at_ms: null,
      })),
    )
    .execute();
  return id;
}

/**
 * What a write that may have lowered an account's `available` tells `checkLowBalance`: the
 * `available` at the start of the write, or (when the write did not read it) by how much the
 * whole write lowered it; and the debit that caused the change, or null (a reservation).
 */
export type LowBalanceCheck = { nowMs: number; transactionId: string | null } & (
  | { availableBeforeMicros: number }
  | { loweredByMicros: number }
);

/** The account a check is about; a threshold left out is read. */
export interface LowBalanceAccount {
  id: string;
  project_id: string;
  low_balance_threshold_micros?: number | null | undefined;
}

/**
 * `balance.low` (docs/api.md#event-types): call once at the end of a write unit that may have
 * lowered an account's `available` (a debit, an expiry, a reservation or its confirm), after
 * every change the unit makes to the account. Fires when `available` went from at least the
 * account's threshold at the start of the unit to below it at the end, and only then: a unit
 * that starts below the threshold never fires, so the event comes once per crossing, and again
 * only after `available` has been back at or above the threshold (by a credit, a release, or a
 * hold that ran out) when a later unit crosses anew. Setting the threshold is not such a write
 * and fires nothing. Reads nothing for an account known to have no threshold, or known to have
 * started the unit below it.
 * @param account the account as the unit read (and, on PostgreSQL, locked) it
 */
export async function checkLowBalance(
  trx: Transaction<DB>,
  account: LowBalanceAccount,
  check: LowBalanceCheck,
): Promise<void> {
  const known = account.low_balance_threshold_micros;
  if (known === null) return;
  if ("loweredByMicros" in check && check.loweredByMicros <= 0) return;
  if (
    "availableBeforeMicros" in check &&
    known !== undefined &&
    check.availableBeforeMicros < known
  ) {
    return;
  }
  const now = await findAccountWithBalance(trx, account.project_id, account.id, check.nowMs);
  const threshold = now.account.low_balance_threshold_micros;
  if (threshold === null || now.available >= threshold) return;
  const before =
    "availableBeforeMicros" in check
      ? check.availableBeforeMicros
      : now.available + check.loweredByMicros;
  if (before < threshold) return;
  await emitEvent(trx, {
    projectId: account.project_id,
    type: "balance.low",
    nowMs: check.nowMs,
    data: {
      accountId: now.account.id,
      externalId: now.account.external_id,
      balance: fromMicros(now.balance),
      reserved: fromMicros(now.reserved),
      available: fromMicros(now.available),
      threshold: fromMicros(threshold),
      transactionId: check.transactionId,
    },
  });
}

/**
 * `reservation.expired`: one event per hold the sweeper marked `expired`, with the Reservation
 * object as `data`.
 * @param rows the holds as marked (status `expired`)
 */
export async function emitReservationsExpired(
  trx: Transaction<DB>,
  rows: readonly ReservationRow[],
  nowMs: number,
): Promise<void> {
  for (const row of rows) {
    await emitEvent(trx, {
      projectId: row.project_id,
      type: "reservation.expired",
      nowMs,
      data: reservationJson(row, nowMs),
    });
  }
}

/**
 * `credits.expired`: an expiry debit was booked (docs/api.md#expiry-of-grants). Call right
 * after the debit's `postEntry`.
 * @param expiry.grantId the grant whose remaining credits expired
 */
export async function emitCreditsExpired(
  trx: Transaction<DB>,
  expiry: { grantId: string; transaction: TransactionRow; nowMs: number },
): Promise<void> {
  await emitEntryEvent(trx, "credits.expired", expiry, { grantId: expiry.grantId });
}

/**
 * `plan.granted`: a plan grant was booked. Call right after the grant's `postEntry`.
 * @param grant the assignment and plan ids, the credit transaction, and the start of the
 *   granted period (epoch ms)
 */
export async function emitPlanGranted(
  trx: Transaction<DB>,
  grant: {
    accountPlanId: string;
    planId: string;
    transaction: TransactionRow;
    periodStartMs: number;
    nowMs: number;
  },
): Promise<void> {
  await emitEntryEvent(
    trx,
    "plan.granted",
    grant,
    { accountPlanId: grant.accountPlanId, planId: grant.planId },
    { periodStart: iso(grant.periodStartMs) },
  );
}

/**
 * An event about one ledger entry just booked (`credits.expired`, `plan.granted`). Its `data`
 * is, in this order: the account (`accountId`, `externalId`), the event's own `fields`, the entry
 * (`transactionId`, `amount` and the `balance` after it, in credits), then `trailing`. The
 * externalId is read only when an endpoint subscribes.
 */
async function emitEntryEvent(
  trx: Transaction<DB>,
  type: EventType,
  entry: { transaction: TransactionRow; nowMs: number },
  fields: Record<string, unknown>,
  trailing: Record<string, unknown> = {},
): Promise<void> {
  const { transaction } = entry;
  await emitEvent(trx, {
    projectId: transaction.project_id,
    type,
    nowMs: entry.nowMs,
    data: async () => ({
      accountId: transaction.account_id,
      externalId: await externalIdOf(trx, transaction.account_id),
      ...fields,
      transactionId: transaction.id,
      amount: fromMicros(transaction.amount_micros),
      balance: fromMicros(transaction.balance_after_micros),
      ...trailing,
    }),
  });
}

/** The externalId of an account (which exists: an entry was just booked on it). */
async function externalIdOf(trx: Transaction<DB>, accountId: string): Promise<string> {
  const { external_id } = await trx
    .selectFrom("accounts")
    .select("external_id")
    .where("id", "=", accountId)
    .executeTakeFirstOrThrow();
  return external_id;
}
