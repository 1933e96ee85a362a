/**
 * The `webhooks` section of /openapi.json (docs/api.md#event-types): one entry per event type,
 * a `post` whose body is the event exactly as the service sends it, `{id, type, createdAt,
 * data}`, with `type` fixed to the event's name and `data` the very zod schema its owner emits
 * it from (src/events.ts), and whose headers are the three Standard Webhooks headers
 * (docs/api.md#delivery). Typed clients generate their event types from this section.
 */
import { z } from "@hono/zod-openapi";
import { EVENTS } from "./events.ts";
import type { App } from "./http/context.ts";
import { type EventDefinition, SENT_EVENT_TYPES, type SentEventType } from "./webhooks/outbox.ts";

/** When each event type is sent, for the reference. */
const WHEN: { [T in SentEventType]: string } = {
  "balance.low":
    "A committed write (a debit, an expiry, a reservation or its confirm) took the account's " +
    "`available` from at least its `lowBalanceThreshold` to below it; once per crossing.",
  "reservation.expired": "The sweeper marked a reservation `expired`; `data` is the Reservation.",
  "credits.expired": "An expiry debit of a credit grant was booked.",
  "plan.granted": "A plan grant was booked.",
  "spend_limit.reached":
    "A committed write (a debit, a reservation or a confirm) took a spend limit's window spend " +
    "(spent + held) from below its `amount` to at or above it; once per account, limit and window.",
  "transaction.reversed":
    "A reversal was booked (`POST /v1/transactions/reverse`): `transactionId` is the reversal, " +
    "`reversedTransactionId` the original, `amountReversed` the original's reversals so far.",
  "credits.purchased":
    "A Stripe payment granted credits (`restored: false`), or a refund or dispute that fell " +
    "gave credits back as a restore (`restored: true`).",
  "credits.clawed_back":
    "A Stripe refund or dispute took a purchase's credits back by a reversal " +
    "(`transactionId`); `creditsUncollected` is what this event could not take back.",
  "auto_topup.succeeded":
    "An automatic top-up attempt's PaymentIntent succeeded and its credits were granted " +
    "(with the purchase's `credits.purchased`).",
  "auto_topup.failed":
    "An automatic top-up attempt failed: `reason` is Stripe's decline code or error code, or " +
    "requires_action, no_payment_method, not_configured, unreachable or monthly_limit.",
  "purchase.clawback_incomplete":
    "A Stripe refund or dispute asked for credits already spent or held: " +
    "`creditsUncollected` could not be taken back (`creditsUncollectedTotal` in all).",
  "webhook.test":
    "`POST /v1/webhooks/test` asked for it; sent to that one endpoint only, whatever it " +
    "subscribes to.",
};

/** `balance.low` → `BalanceLow`, the stem of the event's schema and operation names. */
function pascal(type: SentEventType): string {
  return type
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
}

/**
 * The schema of a whole event of one type: `{id, type, createdAt, data}`, registered as the
 * component `<Type>Event` (`BalanceLowEvent`).
 */
export function eventSchema<T extends SentEventType, S extends z.ZodType>(
  definition: Pick<EventDefinition<T, S>, "type" | "data">,
) {
  return z
    .object({
      id: z.string().openapi({
        description: "The event id (`evt_…`), also sent as the `webhook-id` header",
        example: "evt_01M7YKQ49ZK3W7P2N6Y5D8E1RX",
      }),
      type: z.literal(definition.type),
      createdAt: z.string().openapi({
        description: "When the change that caused the event committed (ISO 8601, UTC)",
        example: "2026-11-21T08:22:45.903Z",
      }),
      data: definition.data,
    })
    .openapi(`${pascal(definition.type)}Event`);
}

/** The Standard Webhooks headers of every delivery. */
const deliveryHeaders = z.object({
  "webhook-id": z.string().openapi({
    description: "The event id, the same on every attempt: deduplicate by it",
    example: "evt_01M7YKQ49ZK3W7P2N6Y5D8E1RX",
  }),
  "webhook-timestamp": z.string().openapi({
    description: "Unix seconds of the attempt; refuse one far from your clock",
    example: "1795249365",
  }),
  "webhook-signature": z.string().openapi({
    description: "`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the secret",
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  }),
});

/** Who receives an event of `type`. */
function recipients(type: SentEventType): string {
  if (type === "webhook.test") return "the endpoint it was asked for";
  return `every active endpoint subscribed to \`${type}\``;
}

/** Registers the `webhooks` entry of every event type with `app`'s document. */
export function registerEventWebhooks(app: App): void {
  for (const type of SENT_EVENT_TYPES) {
    const definition: Pick<EventDefinition<SentEventType, z.ZodType>, "type" | "data"> = EVENTS[
      type
    ];
    const name = pascal(definition.type);
    app.openAPIRegistry.registerWebhook({
      method: "post",
      path: definition.type,
      tags: ["Webhooks"],
      operationId: `on${name}`,
      summary: `The ${definition.type} event`,
      description:
        `${WHEN[definition.type]} POSTed as JSON to ${recipients(definition.type)}, signed as ` +
        "Standard Webhooks describes; verify the signature over the raw body " +
        "before parsing it. Amounts are exact decimal literals.",
      security: [],
      request: {
        headers: deliveryHeaders,
        body: {
          required: true,
          content: { "application/json": { schema: eventSchema(definition) } },
        },
      },
      responses: {
        "2XX": { description: "Delivered. Anything else, or no answer within 10 s, is retried" },
      },
    });
  }
}
