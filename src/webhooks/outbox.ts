/**
 * The event outbox (docs/api.md#event-types, docs/design.md#webhook-delivery). It knows the
 * event types and the tables, nothing of what the events are about: each event is defined by
 * the module that owns its rule (`defineEvent`, with the zod schema of its `data`), and written
 * by that module inside the write unit of the change that causes it.
 *
 * An event is stored as `{id, type, createdAt, data}` together with one pending delivery per
 * active endpoint of the project subscribed to its type, so an event exists if and only if its
 * cause committed, and the delivery worker (delivery.ts) finds it in the database however the
 * process ends. An event that no endpoint subscribes to is sent nowhere and not stored.
 */
import type { z } from "@hono/zod-openapi";
import type { Transaction } from "kysely";
import { iso } from "../dates.ts";
import type { DB } from "../db/schema.ts";
import { newId } from "../ids.ts";
import { parseJsonText, stringifyJson } from "../json.ts";
import type { WireOf } from "../wire.ts";

/** Every event type, in the order the API lists them (a webhook's default subscription). */
export const EVENT_TYPES = [
  "balance.low",
  "reservation.expired",
  "credits.expired",
  "plan.granted",
  "spend_limit.reached",
  "transaction.reversed",
  "credits.purchased",
  "credits.clawed_back",
  "purchase.clawback_incomplete",
  "auto_topup.succeeded",
  "auto_topup.failed",
] as const;

/** An event type an endpoint may subscribe to. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The event `POST /v1/webhooks/test` sends to one endpoint, whatever it subscribes to
 * (docs/api.md#managing-webhook-endpoints); never sent otherwise, so not a subscription.
 */
export const TEST_EVENT_TYPE = "webhook.test";

/** Every type of event the service sends: the subscribable ones and the test event. */
export const SENT_EVENT_TYPES = [...EVENT_TYPES, TEST_EVENT_TYPE] as const;

/** A type of event the service sends. */
export type SentEventType = (typeof SENT_EVENT_TYPES)[number];

/** True for the name of an event type an endpoint may subscribe to. */
export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** True for the name of a type of event the service sends (a delivery's `eventType`). */
export function isSentEventType(value: string): value is SentEventType {
  return (SENT_EVENT_TYPES as readonly string[]).includes(value);
}

/** The event types a stored `webhooks.events` column lists (unknown entries are dropped). */
export function parseEventTypes(text: string): EventType[] {
  const value = parseJsonText(text);
  if (!Array.isArray(value)) return [];
  return EVENT_TYPES.filter((type) => value.includes(type));
}

/**
 * An event's `data` as its owner builds it: the value itself, or a function that reads what the
 * value needs and builds it with `make`. The function runs only when an endpoint subscribes;
 * `make` is what makes TypeScript check the object literal's fields against the schema.
 */
export type EventData<S extends z.ZodType> = WireOf<S> | LazyEventData<S>;

/** An event's `data` built only when an endpoint subscribes (see `EventData`). */
export type LazyEventData<S extends z.ZodType> = (
  make: (data: WireOf<S>) => WireOf<S>,
) => Promise<WireOf<S>>;

function isLazy<S extends z.ZodType>(data: EventData<S>): data is LazyEventData<S> {
  return typeof data === "function";
}

/** One event of a defined type, as its owner emits it. */
export interface EventInput<S extends z.ZodType> {
  projectId: string;
  /** The write unit's time, epoch ms: the event's `createdAt`. */
  nowMs: number;
  /** The event's `data`; amounts as `ExactDecimal`s (written as exact literals). */
  data: EventData<S>;
}

/** An event type with the schema of its `data`, and the typed way to write one. */
export interface EventDefinition<T extends SentEventType, S extends z.ZodType> {
  type: T;
  /** The zod schema of the event's `data` (also what the API reference publishes). */
  data: S;
  /**
   * Writes one event of this type and its pending deliveries inside the caller's write unit.
   * @returns the event id, or null when no active endpoint of the project subscribes to it
   */
  emit(trx: Transaction<DB>, event: EventInput<S>): Promise<string | null>;
}

/** Defines the event `type`, whose `data` is described by `data`. */
export function defineEvent<T extends SentEventType, S extends z.ZodType>(
  type: T,
  data: S,
): EventDefinition<T, S> {
  return {
    type,
    data,
    emit: (trx, event) => writeEvent(trx, type, event),
  };
}

/**
 * Writes one event of `definition`'s type with a pending delivery to the endpoint `webhookId`
 * alone, whatever it subscribes to (the test event). The caller has checked the endpoint.
 * @returns the event's and the delivery's ids
 */
export async function emitTo<T extends SentEventType, S extends z.ZodType>(
  trx: Transaction<DB>,
  definition: EventDefinition<T, S>,
  webhookId: string,
  event: EventInput<S>,
): Promise<{ eventId: string; deliveryId: string }> {
  const eventId = await insertEvent(trx, definition.type, event);
  const [deliveryId = ""] = await insertDeliveries(
    trx,
    eventId,
    definition.type,
    [webhookId],
    event,
  );
  return { eventId, deliveryId };
}

const identity = <V>(value: V): V => value;

/**
 * The outbox's write: the event and a pending delivery per subscribed endpoint, all of them in
 * one multi-row statement (a project has at most WEBHOOK_MAX_PER_PROJECT active endpoints, so
 * the statement is bounded).
 */
async function writeEvent<S extends z.ZodType>(
  trx: Transaction<DB>,
  type: SentEventType,
  event: EventInput<S>,
): Promise<string | null> {
  // A paused endpoint (paused_at_ms) still gets its deliveries; they wait until it is active.
  const hooks = await trx
    .selectFrom("webhooks")
    .select(["id", "events"])
    .where("project_id", "=", event.projectId)
    .where("deleted_at_ms", "is", null)
    .execute();
  const subscribed = hooks.filter((h) => parseEventTypes(h.events).some((t) => t === type));
  if (subscribed.length === 0) return null;
  const id = await insertEvent(trx, type, event);
  await insertDeliveries(
    trx,
    id,
    type,
    subscribed.map((hook) => hook.id),
    event,
  );
  return id;
}

/** Inserts the event itself, `{id, type, createdAt, data}`. @returns its id */
async function insertEvent<S extends z.ZodType>(
  trx: Transaction<DB>,
  type: SentEventType,
  event: EventInput<S>,
): Promise<string> {
  const id = newId("evt");
  const data = isLazy(event.data) ? await event.data(identity) : event.data;
  const payload = stringifyJson({ id, type, createdAt: iso(event.nowMs), data });
  await trx
    .insertInto("webhook_events")
    .values({ id, project_id: event.projectId, type, payload, created_at_ms: event.nowMs })
    .execute();
  return id;
}

/** Inserts one pending delivery of event `eventId` per endpoint, due now. @returns their ids */
async function insertDeliveries(
  trx: Transaction<DB>,
  eventId: string,
  type: SentEventType,
  webhookIds: string[],
  event: { projectId: string; nowMs: number },
): Promise<string[]> {
  const rows = webhookIds.map((webhookId) => ({
    id: newId("whd"),
    project_id: event.projectId,
    webhook_id: webhookId,
    event_id: eventId,
    event_type: type,
    status: "pending" as const,
    attempts: 0,
    last_status_code: null,
    last_error: null,
    next_attempt_at_ms: event.nowMs,
    locked_until_ms: null,
    lease_token: null,
    created_at_ms: event.nowMs,
    delivered_at_ms: null,
    ended_at_ms: null,
  }));
  await trx.insertInto("webhook_deliveries").values(rows).execute();
  return rows.map((row) => row.id);
}
