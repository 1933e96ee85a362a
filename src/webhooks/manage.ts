/**
 * Managing webhook endpoints (docs/api.md#managing-webhook-endpoints): update (URL,
 * subscription, description, pause and resume), a new signing secret, the test event, and a
 * new attempt of a failed delivery. Each runs inside the caller's write unit.
 */
import { z } from "@hono/zod-openapi";
import type { Transaction } from "kysely";
import type { DB, WebhookDeliveryRow, WebhookRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { exWebhook } from "../http/examples.ts";
import { defineEvent, type EventType, emitTo, TEST_EVENT_TYPE } from "./outbox.ts";
import { findWebhook, newSecret, subscriptionText } from "./service.ts";

/** The `webhook.test` event: `data` names the endpoint it was sent to. */
export const webhookTest = defineEvent(
  TEST_EVENT_TYPE,
  z
    .object({ webhookId: z.string().openapi({ example: exWebhook.id }) })
    .openapi("WebhookTestData", { example: { webhookId: exWebhook.id } }),
);

export interface UpdateWebhookInput {
  webhookId: string;
  url?: string | undefined;
  events?: EventType[] | undefined;
  description?: string | undefined;
  isActive?: boolean | undefined;
}

/**
 * Changes the fields given of an endpoint. `isActive: false` pauses it: events keep being
 * queued for it, and its deliveries wait (none is claimed) until `isActive: true`, when every
 * due one is sent. A new URL starts with a clean standing (neither answered nor stalled).
 * @returns the updated row
 * @throws ApiError WEBHOOK_NOT_FOUND (also for a deleted endpoint)
 */
export async function updateWebhook(
  trx: Transaction<DB>,
  projectId: string,
  input: UpdateWebhookInput,
  nowMs: number,
): Promise<WebhookRow> {
  const row = await findWebhook(trx, projectId, input.webhookId);
  const changes: Partial<WebhookRow> = {};
  if (input.url !== undefined && input.url !== row.url) {
    Object.assign(changes, { url: input.url, answered_at_ms: null, stalled_at_ms: null });
  }
  if (input.events !== undefined) changes.events = subscriptionText(input.events);
  if (input.description !== undefined) changes.description = input.description;
  if (input.isActive === false) changes.paused_at_ms = row.paused_at_ms ?? nowMs;
  if (input.isActive === true) changes.paused_at_ms = null;
  if (Object.keys(changes).length === 0) return row;
  await trx.updateTable("webhooks").set(changes).where("id", "=", row.id).execute();
  return { ...row, ...changes };
}

/**
 * Gives an endpoint a new signing secret; the old one signs nothing from now on (every attempt
 * claimed after this commit is signed with the new one).
 * @returns the updated row, with the new secret (shown once by the caller, never logged)
 * @throws ApiError WEBHOOK_NOT_FOUND
 */
export async function rotateSecret(
  trx: Transaction<DB>,
  projectId: string,
  webhookId: string,
): Promise<WebhookRow> {
  const row = await findWebhook(trx, projectId, webhookId);
  const secret = newSecret();
  await trx.updateTable("webhooks").set({ secret }).where("id", "=", row.id).execute();
  return { ...row, secret };
}

/**
 * Queues a `webhook.test` event for the endpoint alone, whatever it subscribes to (a paused
 * endpoint gets it once active again).
 * @returns the event's id and its delivery
 * @throws ApiError WEBHOOK_NOT_FOUND
 */
export async function sendTestEvent(
  trx: Transaction<DB>,
  projectId: string,
  webhookId: string,
  nowMs: number,
): Promise<{ eventId: string; delivery: WebhookDeliveryRow }> {
  const row = await findWebhook(trx, projectId, webhookId);
  const data = { webhookId: row.id };
  const { eventId, deliveryId } = await emitTo(trx, webhookTest, row.id, {
    projectId,
    nowMs,
    data,
  });
  return { eventId, delivery: await deliveryRow(trx, projectId, deliveryId) };
}

/**
 * Makes a `failed` delivery pending again, due now: one new attempt (a failure of it ends it
 * `failed` again, with no further retries). `attempts` keeps counting.
 * @returns the delivery as it now is
 * @throws ApiError DELIVERY_NOT_FOUND (unknown, another project's, or removed by retention);
 *   WEBHOOK_NOT_FOUND when its endpoint was deleted; DELIVERY_NOT_FAILED (`details.status`)
 *   when it is pending or delivered
 */
export async function retryDelivery(
  trx: Transaction<DB>,
  projectId: string,
  deliveryId: string,
  nowMs: number,
): Promise<WebhookDeliveryRow> {
  const delivery = await deliveryRow(trx, projectId, deliveryId);
  await findWebhook(trx, projectId, delivery.webhook_id);
  if (delivery.status !== "failed") {
    throw new ApiError(
      "DELIVERY_NOT_FAILED",
      `Delivery ${deliveryId} is ${delivery.status}; only a failed delivery is retried`,
      { status: delivery.status },
    );
  }
  const changes = {
    status: "pending" as const,
    next_attempt_at_ms: nowMs,
    ended_at_ms: null,
    delivered_at_ms: null,
    locked_until_ms: null,
    lease_token: null,
  };
  await trx.updateTable("webhook_deliveries").set(changes).where("id", "=", deliveryId).execute();
  return { ...delivery, ...changes };
}

/**
 * The project's delivery `deliveryId`.
 * @throws ApiError DELIVERY_NOT_FOUND
 */
async function deliveryRow(
  trx: Transaction<DB>,
  projectId: string,
  deliveryId: string,
): Promise<WebhookDeliveryRow> {
  const row = await trx
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("id", "=", deliveryId)
    .where("project_id", "=", projectId)
    .executeTakeFirst();
  if (!row) throw new ApiError("DELIVERY_NOT_FOUND", `Delivery ${deliveryId} not found`);
  return row;
}
