/**
 * Low-balance alerts and signed webhooks (docs/api.md#low-balance-alerts-and-webhooks): the
 * threshold on accounts, the endpoints' routes, each event type's payload, subscriptions, the
 * once-per-crossing rule, retries and failure, redirects not followed, no event from a refused
 * request. Every delivery goes to a real loopback receiver that verifies it with the
 * `standardwebhooks` library.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import { runExpireReservations } from "../src/jobs/expire-reservations.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import {
  closedPort,
  createHook,
  type Receiver,
  startReceiver,
  startWorker,
} from "./webhooks-receiver.ts";

let t: TestLedger;
let receiver: Receiver;
let worker: DeliveryWorker | undefined;

beforeEach(async () => {
  t = await makeLedger();
  receiver = await startReceiver();
});

afterEach(async () => {
  await worker?.stop();
  worker = undefined;
  await receiver.close();
  await t.close();
});

const deduct = (accountId: string, amount: number) =>
  t.call(ledgerRoutes.deduct, { body: { accountId, amount } });
const add = (accountId: string, amount: number) =>
  t.call(ledgerRoutes.add, { body: { accountId, amount } });
const setThreshold = (accountId: string, lowBalanceThreshold: number | null) =>
  t.call(accountRoutes.update, { body: { accountId, lowBalanceThreshold } });
const deliveriesOf = (webhookId: string, query: Record<string, number> = {}) =>
  t.call(webhookRoutes.deliveries, { query: { webhookId, ...query } });
/** The Prometheus text of the ledger's metrics. */
const metricsText = async () => (await t.app.request("/metrics")).text();
const events = (type?: string) =>
  receiver.delivered.filter((r) => type === undefined || r.event.type === type);
/** Lets the worker look for due deliveries a few times. */
const settle = () => new Promise((r) => setTimeout(r, 300));

describe("lowBalanceThreshold on accounts", () => {
  it("is null when unset, set at creation, changed alone by update", async () => {
    const plain = await t.call(accountRoutes.create, { body: { externalId: "a" } });
    expect(plain.account.lowBalanceThreshold).toBeNull();
    const created = await t.call(accountRoutes.create, {
      body: { externalId: "b", name: "B", metadata: { x: 1, y: 2 }, lowBalanceThreshold: 2.5 },
    });
    expect(created.account.lowBalanceThreshold).toBe(2.5);

    const up = await t.call(accountRoutes.update, {
      body: { accountId: "b", metadata: { z: 3 }, lowBalanceThreshold: 0.000001 },
    });
    expect(up).toMatchObject({
      success: true,
      account: { externalId: "b", name: "B", metadata: { z: 3 }, lowBalanceThreshold: 0.000001 },
    });
    const email = await t.call(accountRoutes.update, {
      body: { accountId: up.account.id, email: "b@example.com", lowBalanceThreshold: null },
    });
    expect(email.account).toMatchObject({
      name: "B",
      email: "b@example.com",
      metadata: { z: 3 },
      lowBalanceThreshold: null,
    });
    const got = await t.call(accountRoutes.get, { query: { accountId: "b" } });
    expect(got).toEqual(email.account);
  });

  it("refuses a negative or over-precise threshold and an unknown account", async () => {
    await fundedAccount(t, "a");
    for (const lowBalanceThreshold of [-1, 0.0000001, "5"]) {
      await t.fail(
        accountRoutes.update,
        { body: { accountId: "a", lowBalanceThreshold } },
        400,
        "VALIDATION_ERROR",
      );
    }
    await t.fail(
      accountRoutes.create,
      { body: { externalId: "c", lowBalanceThreshold: -0.5 } },
      400,
      "VALIDATION_ERROR",
    );
    await t.fail(
      accountRoutes.update,
      { body: { accountId: "nobody", name: "x" } },
      404,
      "ACCOUNT_NOT_FOUND",
    );
  });
});

describe("webhook endpoints", () => {
  it("creates with a secret shown once, lists without it, deletes once", async () => {
    const { webhook } = await t.call(webhookRoutes.create, {
      body: { url: "https://example.com/hooks", description: "Billing" },
    });
    expect(webhook).toMatchObject({
      url: "https://example.com/hooks",
      events: [
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
      ],
      description: "Billing",
      isActive: true,
    });
    expect(webhook.id).toMatch(/^wh_/);
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(webhook.secret.slice(6), "base64").length).toBeGreaterThanOrEqual(24);

    const list = await t.call(webhookRoutes.list);
    const { secret, ...listed } = webhook;
    expect(list).toEqual({
      success: true,
      webhooks: [listed],
      pagination: { limit: 50, offset: 0, totalCount: 1, hasMore: false },
    });
    expect(JSON.stringify(list)).not.toContain(secret);

    const del = await t.call(webhookRoutes.delete, { body: { webhookId: webhook.id } });
    expect(del).toEqual({ success: true, webhookId: webhook.id });
    expect((await t.call(webhookRoutes.list)).webhooks).toEqual([]);
    await t.fail(
      webhookRoutes.delete,
      { body: { webhookId: webhook.id } },
      404,
      "WEBHOOK_NOT_FOUND",
    );
  });

  it("validates url and events", async () => {
    const bad = [
      { url: "ftp://example.com/x" },
      { url: "example.com/x" },
      { url: `https://example.com/${"a".repeat(2049 - 20)}` },
      { url: "https://example.com/x", events: ["balance.high"] },
      { url: "https://example.com/x", events: [] },
      { url: "https://example.com/x", description: "d".repeat(1001) },
    ];
    for (const body of bad) {
      await t.fail(webhookRoutes.create, { body }, 400, "VALIDATION_ERROR");
    }
    const longest = `https://example.com/${"a".repeat(2048 - 20)}`;
    expect(longest.length).toBe(2048);
    const created = await t.call(webhookRoutes.create, {
      body: { url: longest, events: ["plan.granted", "balance.low", "plan.granted"] },
    });
    expect(created.webhook.events).toEqual(["balance.low", "plan.granted"]);
  });

  it("keeps projects apart: another project's webhook is 404", async () => {
    const hook = await createHook(t, receiver, "/a");
    const other = await t.newProject("other");
    await t.fail(
      webhookRoutes.delete,
      { body: { webhookId: hook }, key: other.key },
      404,
      "WEBHOOK_NOT_FOUND",
    );
    await t.fail(
      webhookRoutes.deliveries,
      { query: { webhookId: hook }, key: other.key },
      404,
      "WEBHOOK_NOT_FOUND",
    );
    expect((await t.call(webhookRoutes.list, { key: other.key })).webhooks).toEqual([]);
    await t.fail(
      webhookRoutes.deliveries,
      { query: { webhookId: "wh_nope" } },
      404,
      "WEBHOOK_NOT_FOUND",
    );
  });
});

describe("balance.low", () => {
  it("fires once per crossing: down, still down, up, down again", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 20);
    await setThreshold("acme", 10);

    await deduct("acme", 5); // 15: above
    const down = await deduct("acme", 6); // 9: crosses
    await receiver.waitFor(() => events().length === 1, 5000, "first balance.low");
    await deduct("acme", 1); // 8: still down
    await add("acme", 1.5); // 9.5: still below
    await deduct("acme", 0.5); // 9: still down
    await add("acme", 1); // 10: back at the threshold
    const again = await deduct("acme", 0.000001); // 9.999999: crosses again
    await receiver.waitFor(() => events().length === 2, 5000, "second balance.low");
    await settle();
    expect(events().map((r) => r.event.type)).toEqual(["balance.low", "balance.low"]);
    expect(receiver.invalid).toEqual([]);

    const [first, second] = events();
    expect(first?.event).toMatchObject({
      type: "balance.low",
      data: {
        externalId: "acme",
        balance: 9,
        reserved: 0,
        available: 9,
        threshold: 10,
        transactionId: down.transactionId,
      },
    });
    expect(first?.id).toBe(first?.event.id);
    expect(Object.keys(first?.event ?? {}).sort()).toEqual(["createdAt", "data", "id", "type"]);
    expect(Object.keys(first?.event.data ?? {}).sort()).toEqual(
      [
        "accountId",
        "available",
        "balance",
        "externalId",
        "reserved",
        "threshold",
        "transactionId",
      ].sort(),
    );
    // Amounts are exact decimal literals in the signed body.
    expect(second?.body).toContain('"available":9.999999');
    expect(second?.event.data.transactionId).toBe(again.transactionId);
  });

  it("fires for a reservation (transactionId null) and its confirm; not for a threshold change", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 100);
    // Setting a threshold above available fires nothing, and the next debit does not cross.
    await setThreshold("acme", 500);
    await deduct("acme", 1);
    await setThreshold("acme", 50);
    await settle();
    expect(events()).toEqual([]);

    const hold = await t.call(reservationRoutes.create, {
      body: { accountId: "acme", amount: 60 },
    });
    await receiver.waitFor(() => events().length === 1, 5000, "balance.low of the hold");
    expect(events()[0]?.event.data).toMatchObject({
      balance: 99,
      reserved: 60,
      available: 39,
      threshold: 50,
      transactionId: null,
    });
    // Released (confirmed at 0): back above; a second hold, confirmed above its amount, crosses.
    await t.call(reservationRoutes.confirm, {
      body: { reservationId: hold.reservation.id, actualAmount: 0 },
    });
    const hold2 = await t.call(reservationRoutes.create, {
      body: { accountId: "acme", amount: 10 },
    });
    const confirm = await t.call(reservationRoutes.confirm, {
      body: { reservationId: hold2.reservation.id, actualAmount: 60 },
    });
    await receiver.waitFor(() => events().length === 2, 5000, "balance.low of the confirm");
    expect(events()[1]?.event.data).toMatchObject({
      balance: 39,
      reserved: 0,
      available: 39,
      transactionId: confirm.transactionId,
    });
  });

  it("is not fired by a refused request", async () => {
    worker = startWorker(t);
    const hook = await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 20);
    await setThreshold("acme", 10);
    await t.fail(
      ledgerRoutes.deduct,
      { body: { accountId: "acme", amount: 25 } },
      402,
      "INSUFFICIENT_CREDITS",
    );
    await t.fail(
      reservationRoutes.create,
      { body: { accountId: "acme", amount: 21 } },
      402,
      "INSUFFICIENT_CREDITS",
    );
    await settle();
    expect(events()).toEqual([]);
    expect((await deliveriesOf(hook)).deliveries).toEqual([]);
    // The same debit, once it fits, does cross.
    await deduct("acme", 15);
    await receiver.waitFor(() => events().length === 1, 5000, "balance.low");
  });
});

describe("the other events", () => {
  it("reservation.expired carries the Reservation object", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook", ["reservation.expired"]);
    await fundedAccount(t, "acme", 10);
    const hold = await t.call(reservationRoutes.create, {
      body: { accountId: "acme", amount: 4, ttlSeconds: 1, metadata: { job: "x" } },
    });
    await new Promise((r) => setTimeout(r, 1100));
    expect(await runExpireReservations({ queue: t.ledger.queue, nowMs: Date.now() })).toBe(1);
    await receiver.waitFor(() => events().length === 1, 5000, "reservation.expired");
    const listed = await t.call(reservationRoutes.list, { query: { accountId: "acme" } });
    expect(events()[0]?.event.type).toBe("reservation.expired");
    expect(events()[0]?.event.data).toEqual(listed.reservations[0]);
    expect(events()[0]?.event.data).toMatchObject({
      id: hold.reservation.id,
      status: "expired",
      amount: 4,
    });
  });

  it("credits.expired names the grant and the expiry debit", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook", ["credits.expired"]);
    await fundedAccount(t, "acme", 3);
    const expiresAt = new Date(Date.now() + 1200).toISOString();
    const grant = await t.call(ledgerRoutes.add, {
      body: { accountId: "acme", amount: 2.5, expiresAt },
    });
    await new Promise((r) => setTimeout(r, 1300));
    await runExpireGrants({ queue: t.ledger.queue, nowMs: Date.now() });
    await receiver.waitFor(() => events().length === 1, 5000, "credits.expired");
    const data = events()[0]?.event.data;
    const txns = await t.call(transactionRoutes.list, { query: { accountId: "acme" } });
    const expiry = txns.items[0];
    expect(expiry?.metadata).toMatchObject({ reason: "credits_expired", grantId: grant.grantId });
    expect(data).toEqual({
      accountId: expiry?.accountId,
      externalId: "acme",
      grantId: grant.grantId,
      transactionId: expiry?.id,
      amount: 2.5,
      balance: 3,
    });
  });

  it("plan.granted carries the assignment, plan, transaction and period", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook", ["plan.granted"]);
    await fundedAccount(t, "acme");
    const { plan } = await t.call(planRoutes.create, {
      body: { name: "Pro", amount: 500, interval: "month" },
    });
    const { accountPlan } = await t.call(planRoutes.assign, {
      body: { accountId: "acme", planId: plan.id },
    });
    await receiver.waitFor(() => events().length === 1, 5000, "plan.granted");
    const txns = await t.call(transactionRoutes.list, { query: { accountId: "acme" } });
    expect(events()[0]?.event.data).toEqual({
      accountId: txns.items[0]?.accountId,
      externalId: "acme",
      accountPlanId: accountPlan.id,
      planId: plan.id,
      transactionId: txns.items[0]?.id,
      amount: 500,
      balance: 500,
      periodStart: accountPlan.startedAt,
    });
  });
});

describe("delivery", () => {
  it("sends each event to the endpoints subscribed to its type, never to a deleted one", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/low", ["balance.low"]);
    await createHook(t, receiver, "/plans", ["plan.granted"]);
    const all = await createHook(t, receiver, "/all");
    const gone = await createHook(t, receiver, "/gone");
    await t.call(webhookRoutes.delete, { body: { webhookId: gone } });
    const other = await t.newProject("other");
    await t.call(webhookRoutes.create, { body: { url: receiver.url("/other") }, key: other.key });

    await t.call(accountRoutes.create, { body: { externalId: "acme", lowBalanceThreshold: 1 } });
    const { plan } = await t.call(planRoutes.create, {
      body: { name: "Pro", amount: 2, interval: "month" },
    });
    await t.call(planRoutes.assign, { body: { accountId: "acme", planId: plan.id } });
    await deduct("acme", 1.5);
    await receiver.waitFor(() => receiver.delivered.length === 4, 5000, "four deliveries");
    await settle();
    const byPath = (p: string) =>
      receiver.delivered.filter((r) => r.path === p).map((r) => r.event.type);
    expect(byPath("/low")).toEqual(["balance.low"]);
    expect(byPath("/plans")).toEqual(["plan.granted"]);
    expect(byPath("/all").sort()).toEqual(["balance.low", "plan.granted"]);
    expect(receiver.attempts.get("/gone")).toBeUndefined();
    expect(receiver.attempts.get("/other")).toBeUndefined();
    expect(receiver.invalid).toEqual([]);
    // One event, one id, at every endpoint.
    const low = receiver.delivered.filter((r) => r.event.type === "balance.low");
    expect(new Set(low.map((r) => r.id)).size).toBe(1);

    const log = await deliveriesOf(all, { limit: 1 });
    expect(log.pagination).toEqual({ limit: 1, offset: 0, totalCount: 2, hasMore: true });
    expect(log.deliveries[0]).toMatchObject({
      eventId: low[0]?.id,
      eventType: "balance.low",
      status: "delivered",
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expect(log.deliveries[0]?.deliveredAt).not.toBeNull();
  });

  it("retries after 500s, then delivers; counts outcomes in /metrics", async () => {
    worker = startWorker(t, { retrySeconds: [0.2, 0.2, 0.2] });
    receiver.answer = (_path, n) => (n <= 2 ? 500 : 204);
    const hook = await createHook(t, receiver, "/hook");
    await fundedAccount(t, "b", 2);
    await setThreshold("b", 1);
    await deduct("b", 1.5);
    await receiver.waitFor(() => receiver.delivered.length === 1, 5000, "the delivery");
    expect(receiver.attempts.get("/hook")).toBe(3);
    await settle();
    const log = await deliveriesOf(hook);
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({
      status: "delivered",
      attempts: 3,
      lastStatusCode: 204,
      lastError: null,
    });
    const metrics = await metricsText();
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="retried"} 2');
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="delivered"} 1');
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="failed"} 0');
    expect(metrics).toContain("ledger_webhook_deliveries_pending 0");
  });

  it("fails after the last retry (a closed port), and a 3xx is not followed", async () => {
    worker = startWorker(t, { retrySeconds: [0.2, 0.2] });
    const port = await closedPort();
    const closedUrl = `http://127.0.0.1:${port}/x`;
    const closed = await createHook(t, receiver, "/closed", ["balance.low"], closedUrl);
    receiver.answer = (path) => (path === "/redirect" ? 302 : 200);
    const redirect = await createHook(t, receiver, "/redirect", ["balance.low"]);
    await fundedAccount(t, "acme", 2);
    await setThreshold("acme", 1);
    await deduct("acme", 1.5);

    const logOf = async (id: string) => (await deliveriesOf(id)).deliveries[0];
    const deadline = Date.now() + 8000;
    while (
      (await logOf(closed))?.status === "pending" ||
      (await logOf(redirect))?.status === "pending"
    ) {
      if (Date.now() > deadline) throw new Error("deliveries still pending");
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await logOf(closed)).toMatchObject({
      status: "failed",
      attempts: 3,
      lastStatusCode: null,
      lastError: "ECONNREFUSED",
      nextAttemptAt: null,
      deliveredAt: null,
    });
    expect(await logOf(redirect)).toMatchObject({
      status: "failed",
      attempts: 3,
      lastStatusCode: 302,
      lastError: "HTTP 302",
    });
    expect(receiver.attempts.get("/redirect")).toBe(3);
    expect(receiver.attempts.get("/moved")).toBeUndefined();
    const metrics = await metricsText();
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="retried"} 4');
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="failed"} 2');
  });

  it("stops delivering to an endpoint once deleted", async () => {
    worker = startWorker(t, { retrySeconds: [0.3, 0.3, 0.3, 0.3] });
    receiver.answer = () => 500;
    const hook = await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 2);
    await setThreshold("acme", 1);
    await deduct("acme", 1.5);
    await receiver.waitFor(() => (receiver.attempts.get("/hook") ?? 0) >= 1, 5000, "an attempt");
    await t.call(webhookRoutes.delete, { body: { webhookId: hook } });
    const seen = receiver.attempts.get("/hook") ?? 0;
    await new Promise((r) => setTimeout(r, 1000));
    // At most an attempt already on the wire when it was deleted.
    expect(receiver.attempts.get("/hook") ?? 0).toBeLessThanOrEqual(seen + 1);
    expect(await metricsText()).toContain("ledger_webhook_deliveries_pending 0");
  });
});

describe("API latency while a receiver hangs", () => {
  let base: string;

  /** The median of `n` sequential deductions over real HTTP, in ms. */
  const p50 = async (n: number) => {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      const res = await fetch(`${base}/v1/accounts/credits/deduct`, {
        method: "POST",
        headers: { "X-API-Key": t.key, "Content-Type": "application/json" },
        body: JSON.stringify({ accountId: "busy", amount: 0.000001 }),
      });
      await res.text();
      if (res.status !== 200) throw new Error(`deduct answered ${res.status}`);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(n / 2)] ?? 0;
  };

  it("is unchanged with more attempts than worker slots on receivers that never answer", async () => {
    base = await t.listen();
    await fundedAccount(t, "busy", 100);
    worker = startWorker(t, { timeoutSeconds: 30, concurrency: 8 });
    await p50(100); // warm up
    const without = await p50(200);

    // Twelve endpoints that never answer, one attempt each on the wire (an endpoint takes one
    // attempt at a time until it answers): more than the worker's 8 slots.
    receiver.answer = () => "hang";
    const paths = Array.from({ length: 12 }, (_, i) => `/hang-${i}`);
    for (const path of paths) await createHook(t, receiver, path, ["balance.low"]);
    await fundedAccount(t, "low", 2);
    await setThreshold("low", 1);
    await deduct("low", 1.5);
    const onTheWire = () => paths.reduce((n, p) => n + (receiver.attempts.get(p) ?? 0), 0);
    await receiver.waitFor(() => onTheWire() >= 12, 5000, "hanging attempts");
    const hanging = await p50(200);
    expect(onTheWire()).toBe(12);
    process.stdout.write(
      `API p50 deduction: ${without.toFixed(3)} ms without webhooks, ${hanging.toFixed(3)} ms with 12 attempts hanging\n`,
    );
    expect(hanging).toBeLessThanOrEqual(2 * without + 5);
  }, 60_000);
});
