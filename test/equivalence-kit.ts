/**
 * The machinery of the plain-against-general equivalence tests (test/debit-equivalence.test.ts,
 * test/member-equivalence.test.ts): two ledgers on fake clocks that run the same requests, one
 * whose write path tries each write's plain form first and counts the writes it made, one whose
 * write path is given the writes without their plain form, so that every write takes the general
 * path; the calls, the clock's boundaries, and the canonical text that compares what the two
 * answered and stored.
 */
import { expect } from "vitest";
import { createApp } from "../src/app.ts";
import type { Engine } from "../src/db/engine.ts";
import type { PlainWrite, TwoPathWrite, WriteQueue } from "../src/db/write-path.ts";
import type { App } from "../src/http/context.ts";
import { EVENT_TYPES } from "../src/webhooks/outbox.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** A spend limit as the API takes it (docs/api.md#spend-limits). */
export interface Limit {
  period: string;
  amount: number;
  timeZone?: string;
  soft?: boolean;
}

/**
 * An instant on the clock: the first after now at which `everyMs` divides the time less
 * `offsetMs` (the next hour, the next day in a zone), then `plusMs` more (may be negative).
 */
export interface Boundary {
  everyMs: number;
  offsetMs?: number;
  plusMs?: number;
}

/** The instant `b` after `nowMs` (epoch ms). */
export function nextBoundary(nowMs: number, b: Boundary): number {
  const offset = b.offsetMs ?? 0;
  const next = (Math.floor((nowMs - offset) / b.everyMs) + 1) * b.everyMs + offset;
  return next + (b.plusMs ?? 0);
}

/** Whether a case's write is plain: on every engine, or per engine. */
export type PlainExpected = boolean | Record<Engine, boolean>;

/** `expected` on `engine`. */
export function plainOn(expected: PlainExpected, engine: Engine): boolean {
  return typeof expected === "boolean" ? expected : expected[engine];
}

/** Counts the writes a plain path made. */
export interface PlainCount {
  made: number;
}

/** `write` counting in `count` each time it makes the write. */
export function counted<T>(write: PlainWrite<T>, count: PlainCount): PlainWrite<T> {
  const seen = (result: T | null) => {
    if (result !== null) count.made++;
    return result;
  };
  return {
    sqlite: async (trx, nowMs, limits) => seen(await write.sqlite(trx, nowMs, limits)),
    postgres: async (db, nowMs, limits) => seen(await write.postgres(db, nowMs, limits)),
  };
}

/**
 * `queue` handed each write with its plain path counted in `count`, or (`count` undefined)
 * without its plain path: then every write takes the general path.
 */
export function throughPaths(queue: WriteQueue, count?: PlainCount): WriteQueue {
  const paths = <T>(write: TwoPathWrite<T>): TwoPathWrite<T> => ({
    general: write.general,
    plain: count && write.plain ? counted(write.plain, count) : undefined,
  });
  return {
    run: (unit) => queue.run(unit),
    runWrite: (write) => queue.runWrite(paths(write)),
    unitOf: (write) => queue.unitOf(paths(write)),
    idle: () => queue.idle(),
    get depth() {
      return queue.depth;
    },
    health: queue.health,
  };
}

/** One of the two ledgers: its test ledger, the app over its counted or general-only queue. */
export interface Side {
  t: TestLedger;
  app: App;
  count: PlainCount;
}

/** A ledger whose app runs every write through the plain path first (`plain`), or never. */
export async function side(plain: boolean): Promise<Side> {
  const t = await makeLedger({ fakeClock: "2026-03-01T00:00:00.000Z" });
  const count = { made: 0 };
  const queue = throughPaths(t.ledger.queue, plain ? count : undefined);
  return { t, app: createApp({ ...t.ledger.deps, queue }), count };
}

/**
 * The two sides, plain first, each with a webhook subscribed to every event type (so that every
 * event is stored, and compared).
 */
export async function twoSides(): Promise<[Side, Side]> {
  const sides = await Promise.all([side(true), side(false)]);
  const hook = { url: "http://127.0.0.1:9/equivalence", events: [...EVENT_TYPES] };
  for (const s of sides) {
    expect((await post(s, "/v1/webhooks/create", hook)).status).toBe(200);
  }
  return sides;
}

/** An answer of `post`: the status, the parsed body, and the replay header when present. */
export interface Answer {
  status: number;
  body: unknown;
  replayed?: string;
}

/** POSTs `body` to `path` on the side's app. @returns the status, the body, a replay's header */
export async function post(s: Side, path: string, body: unknown, key?: string): Promise<Answer> {
  const headers: Record<string, string> = {
    "X-API-Key": s.t.key,
    "Content-Type": "application/json",
    ...(key === undefined ? {} : { "Idempotency-Key": key }),
  };
  const res = await s.app.request(path, { method: "POST", headers, body: JSON.stringify(body) });
  const replayed = res.headers.get("Idempotent-Replayed");
  return { status: res.status, body: await res.json(), ...(replayed ? { replayed } : {}) };
}

/** `value` as JSON text with every generated id replaced by its prefix and order of appearance. */
export function canonical(value: unknown): string {
  const seen = new Map<string, string>();
  return JSON.stringify(value).replace(
    /\b(acc|txn|res|grt|evt|wh|whd|prj|key)_[0-9A-Za-z]{16,}/g,
    (id, prefix: string) => {
      if (!seen.has(id)) seen.set(id, `${prefix}#${seen.size}`);
      return seen.get(id) ?? id;
    },
  );
}
