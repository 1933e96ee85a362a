/**
 * The catalogue of webhook events (docs/api.md#event-types): every event type with the zod
 * schema of its `data`, as the module that owns each rule defines it. The outbox
 * (src/webhooks/outbox.ts) writes each event through its definition, so the events that leave
 * the service are built from these very schemas, which the API reference also publishes. The
 * type below makes a missing, extra or mismatched entry a compile error.
 */
import type { z } from "@hono/zod-openapi";
import { autoTopupFailed, autoTopupSucceeded } from "./accounts/auto-topup-events.ts";
import { balanceLow } from "./accounts/low-balance.ts";
import { creditsExpired } from "./ledger/expiry.ts";
import { transactionReversed } from "./ledger/reversal.ts";
import { spendLimitReached } from "./limits/reached.ts";
import { planGranted } from "./plans/settlement.ts";
import { reservationExpired } from "./reservations/service.ts";
import {
  clawbackIncomplete,
  creditsClawedBack,
  creditsPurchased,
} from "./stripe/purchase-events.ts";
import { webhookTest } from "./webhooks/manage.ts";
import type { EventDefinition, SentEventType } from "./webhooks/outbox.ts";

/** Each event type → its definition (the type and the schema of its `data`). */
export const EVENTS = {
  "balance.low": balanceLow,
  "reservation.expired": reservationExpired,
  "credits.expired": creditsExpired,
  "plan.granted": planGranted,
  "spend_limit.reached": spendLimitReached,
  "transaction.reversed": transactionReversed,
  "credits.purchased": creditsPurchased,
  "credits.clawed_back": creditsClawedBack,
  "purchase.clawback_incomplete": clawbackIncomplete,
  "auto_topup.succeeded": autoTopupSucceeded,
  "auto_topup.failed": autoTopupFailed,
  "webhook.test": webhookTest,
} as const satisfies { [T in SentEventType]: EventDefinition<T, z.ZodType> };
