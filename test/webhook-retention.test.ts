/**
 * Retention of webhook data (docs/design.md#webhook-retention), on a fake clock: delivered and
 * failed deliveries are deleted once they ended more than WEBHOOK_RETENTION_DAYS ago, events
 * once none of their deliveries is left, deleted endpoints once nothing of them is left; nothing
 * younger and nothing pending is deleted, and no ledger row ever is. The job logs at debug when
 * it did nothing. WEBHOOK_RETENTION_DAYS is a positive decimal, anything else refuses to start.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { loadConfig } from "../src/config.ts";
import { runPurgeWebhooks } from "../src/jobs/purge-webhooks.ts";
import { type JobLogger, type Scheduler, startScheduler } from "../src/jobs/scheduler.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { type Receiver, startReceiver, startWorker } from "./webhooks-receiver.ts";

const T0 = Date.parse("2026-03-01T00:00:00Z");
const DAY = 86_400_000;
const YEAR_S = 365 * 86_400;

let t: TestLedger;
let receiver: Receiver;
let scheduler: Scheduler;
const logged: { level: string; obj: object }[] = [];

beforeEach(async () => {
  t = await makeLedger({ fakeClock: new Date(T0).toISOString() });
  receiver = await startReceiver();
  receiver.answer = (path) => (path === "/ok" ? 200 : 500);
  logged.length = 0;
  const logger: JobLogger = {
    debug: (obj) => logged.push({ level: "debug", obj }),
    info: (obj) => logged.push({ level: "info", obj }),
    warn: (obj) => logged.push({ level: "warn", obj }),
    error: (obj) => logged.push({ level: "error", obj }),
  };
  const never = "0 0 0 1 1 *";
  scheduler = startScheduler({
    queue: t.ledger.queue,
    clock: t.now,
    logger,
    expireCron: never,
    grantCron: never,
    retentionCron: never,
    webhookRetentionDays: 30,
  });
});

afterEach(async () => {
  scheduler.stop();
  await receiver.close();
  await t.close();
});

/** Creates an endpoint at `path` of the receiver. @returns its id */
async function hook(path: string): Promise<string> {
  const { webhook } = await t.call(webhookRoutes.create, { body: { url: receiver.url(path) } });
  receiver.setSecret(path, webhook.secret);
  return webhook.id;
}

/** One balance.low event (to every endpoint). */
async function crossing(externalId: string) {
  await t.call(accountRoutes.create, { body: { externalId, lowBalanceThreshold: 1 } });
  await t.call(ledgerRoutes.add, { body: { accountId: externalId, amount: 2 } });
  await t.call(ledgerRoutes.deduct, { body: { accountId: externalId, amount: 1.5 } });
}

/** Runs a worker until no delivery is due any more, then stops it. */
async function deliverDue(retrySeconds: number[]) {
  const worker = startWorker(t, { retrySeconds });
  const due = () =>
    t.ledger.db.read
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("status", "=", "pending")
      .where("next_attempt_at_ms", "<=", t.now())
      .execute();
  const deadline = Date.now() + 10_000;
  while ((await due()).length > 0) {
    if (Date.now() > deadline) throw new Error("deliveries still due");
    await new Promise((r) => setTimeout(r, 20));
  }
  await worker.stop();
}

/** What is stored: deliveries (event, path, status, ended), events, endpoints. */
async function stored() {
  const db = t.ledger.db.read;
  const deliveries = await db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhooks as w", "w.id", "d.webhook_id")
    .select(["d.event_id", "w.url", "d.status", "d.ended_at_ms"])
    .orderBy("d.created_at_ms")
    .orderBy("d.event_id")
    .orderBy("w.url")
    .execute();
  const events = await db.selectFrom("webhook_events").select("id").orderBy("id").execute();
  const webhooks = await db.selectFrom("webhooks").select("id").orderBy("id").execute();
  return {
    deliveries: deliveries.map((d) => [
      d.event_id,
      new URL(d.url).pathname,
      d.status,
      d.ended_at_ms === null ? null : d.ended_at_ms - T0,
    ]),
    events: events.map((e) => e.id),
    webhooks: webhooks.map((w) => w.id),
  };
}

/** How many rows each ledger table holds. */
async function ledgerCounts() {
  const db = t.ledger.db.read;
  const count = async (
    table: "transactions" | "credit_grants" | "reservations" | "usage_records",
  ) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    transactions: await count("transactions"),
    grants: await count("credit_grants"),
    reservations: await count("reservations"),
    usage: await count("usage_records"),
  };
}

/** The purge job's run now, through the scheduler. @returns its log line */
async function purgeNow() {
  logged.length = 0;
  await scheduler.runNow("purge-webhooks");
  expect(logged).toHaveLength(1);
  return logged[0];
}

describe("the retention job", () => {
  it("deletes what ended long enough ago, never younger, pending or ledger rows", async () => {
    const ok = await hook("/ok");
    const fail = await hook("/fail");
    // E1 at T0: delivered to /ok, failed at /fail (no retries).
    await crossing("e1");
    await deliverDue([]);
    // Ledger rows of every kind, which no purge may touch.
    const { reservation } = await t.call(reservationRoutes.create, {
      body: { accountId: "e1", amount: 0.1 },
    });
    await t.call(reservationRoutes.confirm, {
      body: { reservationId: reservation.id, actualAmount: 0.1 },
    });
    await t.call(usageRoutes.record, {
      body: { accountId: "e1", modelId: "gpt-4o", inputTokens: 10, outputTokens: 5 },
    });
    // E2 at T0: delivered to /ok; /fail and a new /pending answer 500 and retry in a year.
    await hook("/pending");
    await crossing("e2");
    await deliverDue([YEAR_S]);
    const [e1, e2] = (await stored()).deliveries
      .map((d) => d[0])
      .filter((id, i, a) => a.indexOf(id) === i);

    // T0 + 29 days: nothing is old enough; E3 ends at all three.
    t.setNow(T0 + 29 * DAY);
    expect(await purgeNow()).toMatchObject({
      level: "debug",
      obj: { job: "purge-webhooks", result: { deliveries: 0, events: 0, webhooks: 0 } },
    });
    await crossing("e3");
    await deliverDue([]);
    const before = await stored();
    expect(before.deliveries).toEqual([
      [e1, "/fail", "failed", 0],
      [e1, "/ok", "delivered", 0],
      [e2, "/fail", "pending", null],
      [e2, "/ok", "delivered", 0],
      [e2, "/pending", "pending", null],
      [expect.any(String), "/fail", "failed", 29 * DAY],
      [expect.any(String), "/ok", "delivered", 29 * DAY],
      [expect.any(String), "/pending", "failed", 29 * DAY],
    ]);
    const e3 = before.deliveries[5]?.[0];
    const ledgerBefore = await ledgerCounts();
    expect(ledgerBefore).toEqual({ transactions: 7, grants: 3, reservations: 1, usage: 1 });

    // Exactly 30 days after T0: not older than 30 days yet.
    t.setNow(T0 + 30 * DAY);
    expect((await purgeNow())?.level).toBe("debug");
    expect(await stored()).toEqual(before);

    // Just past it: E1's and E2's ended deliveries go, E1 with them; E2 keeps its pending ones.
    t.setNow(T0 + 30 * DAY + 1);
    expect(await purgeNow()).toMatchObject({
      level: "info",
      obj: { job: "purge-webhooks", result: { deliveries: 3, events: 1, webhooks: 0 } },
    });
    // Deleting /fail ends its pending delivery of E2 now: the endpoint stays while it has one.
    await t.call(webhookRoutes.delete, { body: { webhookId: fail } });
    expect((await purgeNow())?.level).toBe("debug");
    const middle = await stored();
    expect(middle.deliveries).toEqual([
      [e2, "/fail", "failed", 30 * DAY + 1],
      [e2, "/pending", "pending", null],
      [e3, "/fail", "failed", 29 * DAY],
      [e3, "/ok", "delivered", 29 * DAY],
      [e3, "/pending", "failed", 29 * DAY],
    ]);
    expect(middle.events).toEqual([e2, e3].sort());
    expect(middle.webhooks).toContain(fail);

    // Thirty more days, in batches of one: E3 goes, E2's failed delivery, the deleted /fail.
    t.setNow(T0 + 60 * DAY + 2);
    const result = await runPurgeWebhooks({
      queue: t.ledger.queue,
      nowMs: t.now(),
      retentionDays: 30,
      batchSize: 1,
    });
    expect(result).toEqual({ deliveries: 4, events: 1, webhooks: 1 });
    const after = await stored();
    expect(after.deliveries).toEqual([[e2, "/pending", "pending", null]]);
    expect(after.events).toEqual([e2]);
    expect(after.webhooks).not.toContain(fail);
    expect(after.webhooks).toContain(ok);
    expect(after.webhooks).toHaveLength(2);
    expect((await t.call(webhookRoutes.list)).pagination.totalCount).toBe(2);

    // A year on, the pending delivery is still there, and the ledger never lost a row.
    t.setNow(T0 + 300 * DAY);
    expect((await purgeNow())?.obj).toMatchObject({ result: { deliveries: 0 } });
    expect((await stored()).deliveries).toEqual([[e2, "/pending", "pending", null]]);
    expect(await ledgerCounts()).toEqual(ledgerBefore);
    expect(await t.verify()).toEqual([]);
  });

  it("counts half a day for WEBHOOK_RETENTION_DAYS=0.5", async () => {
    await hook("/ok");
    await crossing("e1");
    await deliverDue([]);
    const purge = (nowMs: number) =>
      runPurgeWebhooks({ queue: t.ledger.queue, nowMs, retentionDays: 0.5 });
    expect(await purge(T0 + DAY / 2)).toEqual({ deliveries: 0, events: 0, webhooks: 0 });
    expect(await purge(T0 + DAY / 2 + 1)).toEqual({ deliveries: 1, events: 1, webhooks: 0 });
  });
});

describe("WEBHOOK_RETENTION_DAYS and RETENTION_CRON", () => {
  it("takes a positive decimal of days, 30 and every minute by default", () => {
    expect(loadConfig({}).WEBHOOK_RETENTION_DAYS).toBe(30);
    expect(loadConfig({}).RETENTION_CRON).toBe("0 * * * * *");
    expect(loadConfig({ WEBHOOK_RETENTION_DAYS: "0.5" }).WEBHOOK_RETENTION_DAYS).toBe(0.5);
    expect(loadConfig({ WEBHOOK_RETENTION_DAYS: "7" }).WEBHOOK_RETENTION_DAYS).toBe(7);
  });

  it("refuses anything else, naming the variable", () => {
    for (const value of [
      "0",
      "0.0",
      "-1",
      "abc",
      "1e3",
      "30d",
      "",
      " ",
      "Infinity",
      "NaN",
      "36501",
    ]) {
      expect(() => loadConfig({ WEBHOOK_RETENTION_DAYS: value }), value).toThrow(
        /WEBHOOK_RETENTION_DAYS: must be a positive decimal number of days/,
      );
    }
  });
});
