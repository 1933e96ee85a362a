/**
 * Webhook endpoints of a project and their deliveries (docs/api.md#webhook-endpoints): create
 * (with its signing secret, returned only then; at most WEBHOOK_MAX_PER_PROJECT active ones, to
 * public addresses only), list, delete (which ends every delivery to it), and the delivery log
 * of one endpoint.
 */
import { randomBytes } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { lockKey } from "../db/locks.ts";
import { countedPage } from "../db/paging.ts";
import { projectRow } from "../db/project-row.ts";
import type { DB, WebhookRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import { EVENT_TYPES, type EventType } from "./outbox.ts";
import { creationProblem, type TargetPolicy } from "./targets.ts";

/** Random bytes of a new secret (the contract asks for at least 24). */
export const SECRET_BYTES = 32;

/**
 * The project's endpoint `webhookId`, not deleted (or, with `includeDeleted`, deleted but not
 * yet removed by retention).
 * @throws ApiError WEBHOOK_NOT_FOUND (also for another project's or a deleted endpoint)
 */
export async function findWebhook(
  db: Kysely<DB> | Transaction<DB>,
  projectId: string,
  webhookId: string,
  options: { includeDeleted?: boolean } = {},
): Promise<WebhookRow> {
  const row = await projectRow(db.selectFrom("webhooks"), projectId, webhookId)
    .selectAll()
    .$if(!options.includeDeleted, (q) => q.where("deleted_at_ms", "is", null))
    .executeTakeFirst();
  if (!row) throw new ApiError("WEBHOOK_NOT_FOUND", `Webhook ${webhookId} not found`);
  return row;
}

export interface CreateWebhookInput {
  url: string;
  events?: EventType[] | undefined;
  description?: string | undefined;
}

/**
 * Checks that a new endpoint's `url` targets a public address (docs/api.md#webhook-targets):
 * its literal host, and what its name resolves to now (a name that does not resolve is
 * accepted). Run before the write unit, since it may wait for DNS.
 * @throws ApiError VALIDATION_ERROR naming `body.url`, whose message says that
 *   `WEBHOOK_ALLOW_PRIVATE=true` allows such targets for local development
 */
export async function assertPublicTarget(url: string, policy: TargetPolicy): Promise<void> {
  const problem = await creationProblem(new URL(url), policy);
  if (problem === undefined) return;
  const message =
    `must target a public address: ${problem}; WEBHOOK_ALLOW_PRIVATE=true allows such ` +
    "targets for local development";
  throw new ApiError("VALIDATION_ERROR", `Invalid body.url: ${message}`, [
    { path: "body.url", message },
  ]);
}

/**
 * The stored form of a subscription: the JSON array of `events` (default: every type) in the
 * API's order, repeats dropped.
 */
export function subscriptionText(events: readonly EventType[] | undefined): string {
  const wanted = events ?? EVENT_TYPES;
  return stringifyJson(EVENT_TYPES.filter((type) => wanted.includes(type)));
}

/** A new signing secret: `whsec_` + base64 of SECRET_BYTES random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/**
 * Creates an endpoint subscribed to `events` (default: every type; repeats are dropped) with a
 * new secret: `whsec_` + base64 of 32 random bytes. The project's endpoints are counted under a
 * lock of the project (on PostgreSQL an advisory lock, so two creates in two processes take
 * turns; SQLite's writer runs one unit at a time), so the limit holds exactly.
 * @param maxActive WEBHOOK_MAX_PER_PROJECT
 * @returns the stored row, secret included (the caller shows it once and never logs it)
 * @throws ApiError WEBHOOK_LIMIT_REACHED when the project already has `maxActive` endpoints
 */
export async function createWebhook(
  trx: Transaction<DB>,
  projectId: string,
  input: CreateWebhookInput,
  nowMs: number,
  maxActive: number,
): Promise<WebhookRow> {
  await lockKey(trx, "webhooks", projectId);
  const { count } = await trx
    .selectFrom("webhooks")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .where("project_id", "=", projectId)
    .where("deleted_at_ms", "is", null)
    .executeTakeFirstOrThrow();
  if (Number(count) >= maxActive) {
    throw new ApiError(
      "WEBHOOK_LIMIT_REACHED",
      `A project has at most ${maxActive} active webhooks; delete one first`,
      { limit: maxActive },
    );
  }
  const values = {
    id: newId("wh"),
    project_id: projectId,
    url: input.url,
    events: subscriptionText(input.events),
    description: input.description ?? "",
    secret: newSecret(),
    created_at_ms: nowMs,
    deleted_at_ms: null,
  };
  await trx.insertInto("webhooks").values(values).execute();
  return {
    ...values,
    busy_until_ms: null,
    busy_token: null,
    answered_at_ms: null,
    stalled_at_ms: null,
    paused_at_ms: null,
  };
}

/** A page of the project's endpoints (deleted ones left out), oldest first, with the total. */
export function listWebhooks(
  db: Kysely<DB>,
  projectId: string,
  page: { limit: number; offset: number },
) {
  const base = db
    .selectFrom("webhooks")
    .where("project_id", "=", projectId)
    .where("deleted_at_ms", "is", null);
  return countedPage(base, (q) => q.orderBy("created_at_ms").orderBy("id"), page);
}

/**
 * Deletes an endpoint: it leaves the list, new events are not sent to it, and its pending
 * deliveries end as `failed` ("webhook deleted"). An attempt already on the wire finishes, but
 * its outcome is not recorded (the delivery is no longer pending).
 * @throws ApiError WEBHOOK_NOT_FOUND
 */
export async function deleteWebhook(
  trx: Transaction<DB>,
  projectId: string,
  webhookId: string,
  nowMs: number,
): Promise<void> {
  await findWebhook(trx, projectId, webhookId);
  await trx
    .updateTable("webhooks")
    .set({ deleted_at_ms: nowMs })
    .where("id", "=", webhookId)
    .execute();
  await trx
    .updateTable("webhook_deliveries")
    .set({
      status: "failed",
      last_error: "webhook deleted",
      next_attempt_at_ms: null,
      ended_at_ms: nowMs,
      locked_until_ms: null,
      lease_token: null,
    })
    .where("webhook_id", "=", webhookId)
    .where("status", "=", "pending")
    .execute();
}

/**
 * A page of an endpoint's deliveries, newest first, with the total. A deleted endpoint's
 * deliveries stay listed until retention removes them (docs/api.md#managing-webhook-endpoints).
 * @throws ApiError WEBHOOK_NOT_FOUND (unknown, another project's, or removed by retention)
 */
export async function listDeliveries(
  db: Kysely<DB>,
  projectId: string,
  webhookId: string,
  page: { limit: number; offset: number },
) {
  await findWebhook(db, projectId, webhookId, { includeDeleted: true });
  const base = db.selectFrom("webhook_deliveries").where("webhook_id", "=", webhookId);
  return countedPage(base, (q) => q.orderBy("created_at_ms", "desc").orderBy("id", "desc"), page);
}
