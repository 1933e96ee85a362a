/**
 * A confirm with `usage` instead of `actualAmount` (docs/api.md#charging-usage-in-credits): the
 * amount debited is the usage's credit cost, and the usage record is written in the same unit as
 * the confirm. The confirm is `confirmReservation` itself (section 7's rules, the general path, the
 * spending order, the low-balance alert); this adds the pricing before it and the record after.
 */
import type { Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { newId } from "../ids.ts";
import type { TokenCounts } from "../money.ts";
import { priceInCredits } from "../usage/charge.ts";
import { insertUsage, usageRow } from "../usage/service.ts";
import { confirmReservation } from "./service.ts";

/** The account of the project's reservation (no lock). */
const holdAccount = prepared<{ projectId: string; reservationId: string }, { account_id: string }>(
  (db, arg) =>
    db
      .selectFrom("reservations")
      .select("account_id")
      .where("id", "=", arg("reservationId"))
      .where("project_id", "=", arg("projectId")),
);

/** The usage a confirm names. */
export interface ConfirmUsage extends TokenCounts {
  modelId: string;
  usageType: string;
}

/**
 * Prices `usage` at the project's credit price, confirms the hold with that amount and records
 * the usage (context customer, the hold's account, `transactionId` = the confirm's debit).
 * When the confirm is refused (402 on an excess beyond `available`, 409, 404) the unit fails
 * and nothing is recorded; the hold stays as it was.
 * @returns the confirm's result, the usage record and the credits charged (micro-credits)
 * @throws ApiError VALIDATION_ERROR (no credit price; a cost above 1e9 credits),
 *   MODEL_NOT_FOUND, and those of `confirmReservation`
 */
export async function confirmWithUsage(
  trx: Transaction<DB>,
  projectId: string,
  reservationId: string,
  usage: ConfirmUsage,
  nowMs: number,
) {
  // The hold's account never changes: it is read beside the prices (on PostgreSQL, sent
  // together), unlocked; the confirm locks and checks the hold itself.
  const [priced, holder] = await Promise.allSettled([
    priceInCredits(trx, projectId, usage.modelId, usage),
    trx.executeQuery(holdAccount(trx, { projectId, reservationId })),
  ]);
  if (priced.status === "rejected") throw priced.reason;
  if (holder.status === "rejected") throw holder.reason;
  const { model, creditsMicros } = priced.value;
  const done = await confirmReservation(trx, projectId, reservationId, creditsMicros, nowMs);
  const charge = {
    id: newId("use"),
    transactionId: done.transaction.id,
    creditsChargedMicros: creditsMicros,
  };
  const accountId = holder.value.rows[0]?.account_id;
  if (accountId === undefined) throw new Error(`confirmed reservation ${reservationId} not read`);
  const input = { ...usage, context: "customer" as const };
  const row = await insertUsage(trx, usageRow(projectId, input, model, accountId, nowMs, charge));
  return { done, row, creditsMicros };
}
