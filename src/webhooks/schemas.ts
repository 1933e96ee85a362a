/** zod schemas of webhook endpoints and their deliveries (docs/api.md#webhook-endpoints). */
import { z } from "@hono/zod-openapi";
import { exampleDelivery, exampleWebhook, exWebhook } from "../http/examples.ts";
import { stringProblem } from "../http/json.ts";
import { descriptionString, idString, pageQuery, paginationSchema } from "../http/schemas.ts";
import { EVENT_TYPES } from "./events.ts";

/** Longest endpoint URL, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const eventType = z.enum(EVENT_TYPES);

/** An absolute `http:` or `https:` URL of at most 2,048 characters. */
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
  isActive: z.boolean().openapi({ example: true }),
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

export const createWebhookBody = z
  .object({
    url: webhookUrl,
    events: z
      .array(eventType)
      .min(1)
      .max(EVENT_TYPES.length * 4)
      .optional()
      .openapi({ description: "Default: every event type", example: ["balance.low"] }),
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

export const listWebhooksQuery = z.object({});

export const listWebhooksResponse = z
  .object({ success: z.literal(true), webhooks: z.array(webhookSchema) })
  .openapi({ example: { success: true, webhooks: [exampleWebhook] } });

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
    eventType: eventType,
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
