/**
 * The `spend_limit.reached` event (docs/api.md#event-types, docs/api.md#spend-limits): a
 * committed write took a limit's window spend (spent + held) from below its `amount` to at or
 * above it. Once per account, limit and window: the unit records each as a row of
 * `spend_limit_reached` and sends the event only when that row is new.
 */
import { z } from "@hono/zod-openapi";
import type { Transaction } from "kysely";
import { iso } from "../dates.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import { ex } from "../http/examples.ts";
import { fromMicros } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import type { LimitState } from "./judge.ts";
import { limitKey } from "./limits.ts";
import { windowBounds } from "./schemas.ts";
import { isEndless, PERIODS } from "./windows.ts";

/** The `data` of a `spend_limit.reached` event: the limit, its window and its figures after. */
export const spendLimitReachedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    period: z.enum(PERIODS).openapi({ example: "day" }),
    amount: z.number().openapi({ description: "The limit, credits", example: 80 }),
    timeZone: z.string().openapi({ example: "Europe/Paris" }),
    soft: z.boolean().openapi({ example: true }),
    ...windowBounds,
    spent: z.number().openapi({ description: "Spent in the window after the write", example: 78 }),
    held: z.number().openapi({ description: "Held by pending reservations after it", example: 4 }),
    transactionId: z.string().nullable().openapi({
      description: "The debit that reached the limit; null when a reservation did",
      example: ex.deductTxnId,
    }),
    reservationId: z.string().nullable().openapi({
      description: "The reservation that reached the limit; null when a debit did",
      example: null,
    }),
    onBehalfOf: z
      .string()
      .optional()
      .openapi({
        description:
          "When a member's write reached the limit of an account above it: the member " +
          "(docs/api.md#pools-and-members)",
        example: "acc_01J9ZB4M2N6P8Q0R2S4T6V8W0X",
      }),
  })
  .openapi("SpendLimitReachedData");

/** The `spend_limit.reached` event. */
export const spendLimitReached = defineEvent("spend_limit.reached", spendLimitReachedData);

/** What the write did: its time, how it moved spent and held, and its cause. */
export interface ReachedBy {
  atMs: number;
  spentDeltaMicros: number;
  heldDeltaMicros: number;
  transactionId: string | null;
  reservationId: string | null;
  /** The member whose write it was, when another account pays or counts it; else null. */
  onBehalfOf: string | null;
}

/**
 * Sends `spend_limit.reached` for each of `reached` (limits the write took to their amount)
 * whose window has not had one yet, inside the write's unit.
 */
export async function sendReached(
  trx: Transaction<DB>,
  account: Pick<AccountRow, "id" | "project_id" | "external_id">,
  reached: readonly LimitState[],
  by: ReachedBy,
): Promise<void> {
  for (const state of reached) {
    const { limit, window } = state;
    const marked = await trx
      .insertInto("spend_limit_reached")
      .values({
        account_id: account.id,
        limit_key: limitKey(limit),
        window_start_ms: window.startMs,
        created_at_ms: by.atMs,
      })
      .onConflict((oc) => oc.doNothing())
      .returning("limit_key")
      .executeTakeFirst();
    if (marked === undefined) continue;
    await spendLimitReached.emit(trx, {
      projectId: account.project_id,
      nowMs: by.atMs,
      data: {
        accountId: account.id,
        externalId: account.external_id,
        period: limit.period,
        amount: fromMicros(limit.amountMicros),
        timeZone: limit.timeZone,
        soft: limit.soft,
        windowStart: isEndless(window) ? null : iso(window.startMs),
        resetsAt: isEndless(window) ? null : iso(window.endMs),
        spent: fromMicros(state.spentMicros + by.spentDeltaMicros),
        held: fromMicros(state.heldMicros + by.heldDeltaMicros),
        transactionId: by.transactionId,
        reservationId: by.reservationId,
        ...(by.onBehalfOf === null ? {} : { onBehalfOf: by.onBehalfOf }),
      },
    });
  }
}
