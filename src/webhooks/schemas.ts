/**
 * zod schemas of webhook endpoints and their deliveries (docs/api.md#webhook-endpoints), and the
 * mappers of stored endpoints and deliveries to the API's objects.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { WebhookDeliveryRow, WebhookRow } from "../db/schema.ts";
import { exampleDelivery, exampleWebhook, exWebhook } from "../http/examples.ts";
import { stringProblem } from "../http/json.ts";
import { descriptionString, idString, pageQuery, paginationSchema } from "../http/schemas.ts";
import type { WireOf } from "../wire.ts";
import { EVENT_TYPES, isSentEventType, parseEventTypes, SENT_EVENT_TYPES } from "./outbox.ts";

/** Longest endpoint URL, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const eventType = z.enum(EVENT_TYPES);
/** A delivery's event type: a subscribable one, or the test event. */
const sentEventType = z.enum(SENT_EVENT_TYPES);

/**
 * An absolute `http:` or `https:` URL of at most 2,048 characters. Whether its host is a public
 * address is checked after this, by the route (src/webhooks/targets.ts), since it may need DNS.
 */
const webhookUrl = z
  .string()
  .min(1)
  .max(MAX_WEBHOOK_URL_LENGTH)
  .superRefine((value, ctx) => {
    const problem = stringProblem(value) ?? urlProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .openapi({ example: exWebhook.url });

function urlProblem(value: string): string | undefined {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  const web = url && (url.protocol === "http:" || url.protocol === "https:") && url.hostname;
  return web ? undefined : "must be an absolute http or https URL";
}

const webhookFields = {
  id: z.string().openapi({ example: exWebhook.id }),
  url: z.string().openapi({ example: exWebhook.url }),
  events: z.array(eventType).openapi({ example: [...EVENT_TYPES] }),
  description: z.string().openapi({ example: exWebhook.description }),
  isActive: z
    .boolean()
    .openapi({ description: "False while paused: events queue, nothing is sent", example: true }),
  createdAt: z.string().openapi({ example: exWebhook.createdAt }),
};

/** A webhook endpoint as listed (never with its secret). */
export const webhookSchema = z
  .object(webhookFields)
  .openapi("Webhook", { example: exampleWebhook });

/** A new webhook endpoint, with the secret that signs its deliveries (shown only here). */
export const createdWebhookSchema = z
  .object({
    ...webhookFields,
    secret: z.string().openapi({
      description: "`whsec_` + base64 of 32 random bytes; returned only by this call",
      example: exWebhook.secret,
    }),
  })
  .openapi("CreatedWebhook", { example: { ...exampleWebhook, secret: exWebhook.secret } });

/** A subscription: 1 or more event types (repeats dropped). */
const subscription = z
  .array(eventType)
  .min(1)
  .max(EVENT_TYPES.length * 4)
  .openapi({ example: ["balance.low"] });

export const createWebhookBody = z
  .object({
    url: webhookUrl,
    events: subscription.optional().openapi({ description: "Default: every event type" }),
    description: descriptionString.optional().openapi({ example: exWebhook.description }),
  })
  .openapi("CreateWebhookRequest", {
    example: { url: exWebhook.url, events: ["balance.low"], description: exWebhook.description },
  });

export const createWebhookResponse = z
  .object({ success: z.literal(true), webhook: createdWebhookSchema })
  .openapi({
    example: { success: true, webhook: { ...exampleWebhook, secret: exWebhook.secret } },
  });

export const listWebhooksQuery = z.object({ ...pageQuery(50, 500) });

export const listWebhooksResponse = z
  .object({
    success: z.literal(true),
    webhooks: z.array(webhookSchema),
    pagination: paginationSchema,
  })
  .openapi({
    example: {
      success: true,
      webhooks: [exampleWebhook],
      pagination: { limit: 50, offset: 0, totalCount: 1, hasMore: false },
    },
  });

export const deleteWebhookBody = z
  .object({ webhookId: idString.openapi({ example: exWebhook.id }) })
  .openapi("DeleteWebhookRequest", { example: { webhookId: exWebhook.id } });

export const deleteWebhookResponse = z
  .object({ success: z.literal(true), webhookId: z.string() })
  .openapi({ example: { success: true, webhookId: exWebhook.id } });

export const deliveriesQuery = z.object({
  webhookId: idString.openapi({ example: exWebhook.id }),
  ...pageQuery(50, 500),
});

export const deliverySchema = z
  .object({
    id: z.string().openapi({ example: exampleDelivery.id }),
    eventId: z.string().openapi({ example: exampleDelivery.eventId }),
    eventType: sentEventType,
    status: z.enum(["pending", "delivered", "failed"]),
    attempts: z.number().openapi({ description: "HTTP attempts made so far" }),
    lastStatusCode: z
      .number()
      .nullable()
      .openapi({ description: "The HTTP status of the last attempt (null: no answer)" }),
    lastError: z
      .string()
      .nullable()
      .openapi({ description: "Why the last attempt failed (null when it did not)" }),
    nextAttemptAt: z
      .string()
      .nullable()
      .openapi({ description: "When the next attempt is due (null once delivered or failed)" }),
    createdAt: z.string(),
    deliveredAt: z.string().nullable(),
  })
  .openapi("WebhookDelivery", { example: exampleDelivery });

export const listDeliveriesResponse = z
  .object({
    success: z.literal(true),
    deliveries: z.array(deliverySchema),
    pagination: paginationSchema,
  })
  .openapi({
    example: {
      success: true,
      deliveries: [exampleDelivery],
      pagination: { limit: 50, offset: 0, totalCount: 1, hasMore: false },
    },
  });

/** The API's Webhook object (without its secret). */
export function webhookJson(row: WebhookRow): WireOf<typeof webhookSchema> {
  return {
    id: row.id,
    url: row.url,
    events: parseEventTypes(row.events),
    description: row.description,
    isActive: row.deleted_at_ms === null && row.paused_at_ms === null,
    createdAt: iso(row.created_at_ms),
  };
}

/** The API's WebhookDelivery object. */
export function deliveryJson(row: WebhookDeliveryRow): WireOf<typeof deliverySchema> {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: knownEventType(row.event_type),
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    nextAttemptAt:
      row.status === "pending" && row.next_attempt_at_ms !== null
        ? iso(row.next_attempt_at_ms)
        : null,
    createdAt: iso(row.created_at_ms),
    deliveredAt: row.delivered_at_ms === null ? null : iso(row.delivered_at_ms),
  };
}

/**
 * A stored delivery's event type, which the outbox wrote from `SENT_EVENT_TYPES`.
 * @throws Error (a bug or a foreign row) for any other text
 */
function knownEventType(text: string) {
  if (!isSentEventType(text)) throw new Error(`webhook delivery of an unknown event type ${text}`);
  return text;
}

export const updateWebhookBody = z
  .object({
    webhookId: idString.openapi({ example: exWebhook.id }),
    url: webhookUrl.optional(),
    events: subscription.optional().openapi({ description: "Replaces the subscription" }),
    description: descriptionString.optional().openapi({ example: exWebhook.description }),
    isActive: z.boolean().optional().openapi({
      description: "false pauses delivery (events still queue); true resumes it",
      example: false,
    }),
  })
  .openapi("UpdateWebhookRequest", { example: { webhookId: exWebhook.id, isActive: false } });

export const updateWebhookResponse = z
  .object({ success: z.literal(true), webhook: webhookSchema })
  .openapi({ example: { success: true, webhook: { ...exampleWebhook, isActive: false } } });

/** A body naming one endpoint (`rotate-secret`, `test`). */
export const webhookIdBody = z
  .object({ webhookId: idString.openapi({ example: exWebhook.id }) })
  .openapi("WebhookIdRequest", { example: { webhookId: exWebhook.id } });

export const rotateSecretResponse = createWebhookResponse;

export const testWebhookResponse = z
  .object({
    success: z.literal(true),
    eventId: z.string().openapi({ example: exampleDelivery.eventId }),
    delivery: deliverySchema,
  })
  .openapi({
    example: {
      success: true,
      eventId: exampleDelivery.eventId,
      delivery: { ...exampleDelivery, eventType: "webhook.test" },
    },
  });

export const retryDeliveryBody = z
  .object({ deliveryId: idString.openapi({ example: exampleDelivery.id }) })
  .openapi("RetryDeliveryRequest", { example: { deliveryId: exampleDelivery.id } });

export const retryDeliveryResponse = z
  .object({ success: z.literal(true), delivery: deliverySchema })
  .openapi({ example: { success: true, delivery: exampleDelivery } });
