/**
 * A reservation's confirm as a debit (docs/api.md#reservations, docs/design.md#plain-writes): the
 * text of its ledger entry, defined once here and written with the hold when it is made
 * (service.ts `newHold`), and the debit both paths of the confirm make (service.ts
 * `confirmReservation`, plain-confirm.ts).
 */
import type { ReservationRow } from "../db/schema.ts";
import { JsonText, parseJsonColumn, stringifyJson } from "../json.ts";
import type { Debit } from "../ledger/debit.ts";
import { fromMicros } from "../money.ts";

/**
 * The description and metadata text of the entry that confirms `hold` (docs/api.md#reservations):
 * "Reservation <id> confirmed", and the hold's metadata with `reservationId` and
 * `reservedAmount` (the hold's amount in credits). Written with the hold when it is made
 * (`newHold`), so that both paths of its confirm store this very text.
 */
export function confirmEntry(hold: Pick<ReservationRow, "id" | "amount_micros" | "metadata">): {
  description: string;
  metadata: string;
} {
  const metadata = {
    ...(parseJsonColumn(hold.metadata) ?? {}),
    reservationId: hold.id,
    reservedAmount: fromMicros(hold.amount_micros),
  };
  return { description: `Reservation ${hold.id} confirmed`, metadata: stringifyJson(metadata) };
}

/** The source of a confirm's entry. */
export const CONFIRM_SOURCE = "reservation";

/**
 * The debit that confirms `hold` with `actualMicros`, on either path: its entry's text is the
 * one stored with the hold, or `confirmEntry`'s for a hold stored without one (made before
 * confirm texts were stored with holds: `confirm_description` and `confirm_metadata` null).
 */
export function confirmDebit(hold: ReservationRow, actualMicros: number): Debit {
  const { confirm_description: description, confirm_metadata: metadata } = hold;
  const entry =
    description !== null && metadata !== null ? { description, metadata } : confirmEntry(hold);
  return {
    projectId: hold.project_id,
    accountRef: hold.account_id,
    amountMicros: actualMicros,
    description: entry.description,
    metadata: new JsonText(entry.metadata),
    source: CONFIRM_SOURCE,
    hold: { id: hold.id, amountMicros: hold.amount_micros },
  };
}
