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
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** True for the name of an event type. */
export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
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
export interface EventDefinition<T extends EventType, S extends z.ZodType> {
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
export function defineEvent<T extends EventType, S extends z.ZodType>(
  type: T,
  data: S,
): EventDefinition<T, S> {
  return {
    type,
    data,
    emit: (trx, event) => writeEvent(trx, type, event),
  };
}

const identity = <V>(value: V): V => value;

/**
 * The outbox's write: the event and a pending delivery per subscribed endpoint, all of them in
 * one multi-row statement (a project has at most WEBHOOK_MAX_PER_PROJECT active endpoints, so
 * the statement is bounded).
 */
async function writeEvent<S extends z.ZodType>(
  trx: Transaction<DB>,
  type: EventType,
  event: EventInput<S>,
): Promise<string | null> {
  const hooks = await trx
    .selectFrom("webhooks")
    .select(["id", "events"])
    .where("project_id", "=", event.projectId)
    .where("deleted_at_ms", "is", null)
    .execute();
  const subscribed = hooks.filter((h) => parseEventTypes(h.events).includes(type));
  if (subscribed.length === 0) return null;
  const id = newId("evt");
  const data = isLazy(event.data) ? await event.data(identity) : event.data;
  const payload = stringifyJson({ id, type, createdAt: iso(event.nowMs), data });
  await trx
    .insertInto("webhook_events")
    .values({ id, project_id: event.projectId, type, payload, created_at_ms: event.nowMs })
    .execute();
  await trx
    .insertInto("webhook_deliveries")
    .values(
      subscribed.map((hook) => ({
        id: newId("whd"),
        project_id: event.projectId,
        webhook_id: hook.id,
        event_id: id,
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
      })),
    )
    .execute();
  return id;
}
