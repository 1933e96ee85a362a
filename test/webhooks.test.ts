/**
 * Low-balance alerts and signed webhooks (docs/api.md#low-balance-alerts-and-webhooks): the
 * threshold on accounts, the endpoints' routes, each event type's payload, subscriptions, the
 * once-per-crossing rule, retries and failure, redirects not followed, no event from a refused
 * request. Every delivery goes to a real loopback receiver that verifies it with the
 * `standardwebhooks` library.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import { runExpireReservations } from "../src/jobs/expire-reservations.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
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
  t.api("POST", "/v1/accounts/credits/deduct", { body: { accountId, amount } });
const add = (accountId: string, amount: number) =>
  t.api("POST", "/v1/accounts/credits/add", { body: { accountId, amount } });
const events = (type?: string) =>
  receiver.delivered.filter((r) => type === undefined || r.event.type === type);
/** Lets the worker look for due deliveries a few times. */
const settle = () => new Promise((r) => setTimeout(r, 300));

describe("lowBalanceThreshold on accounts", () => {
  it("is null when unset, set at creation, changed alone by update", async () => {
    const plain = await t.api("POST", "/v1/accounts/create", { body: { externalId: "a" } });
    expect(plain.body.account.lowBalanceThreshold).toBeNull();
    const res = await t.api("POST", "/v1/accounts/create", {
      body: { externalId: "b", name: "B", metadata: { x: 1, y: 2 }, lowBalanceThreshold: 2.5 },
    });
    expect(res.status).toBe(200);
    expect(res.body.account.lowBalanceThreshold).toBe(2.5);

    const up = await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "b", metadata: { z: 3 }, lowBalanceThreshold: 0.000001 },
    });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({
      success: true,
      account: { externalId: "b", name: "B", metadata: { z: 3 }, lowBalanceThreshold: 0.000001 },
    });
    const email = await t.api("POST", "/v1/accounts/update", {
      body: { accountId: up.body.account.id, email: "b@example.com", lowBalanceThreshold: null },
    });
    expect(email.body.account).toMatchObject({
      name: "B",
      email: "b@example.com",
      metadata: { z: 3 },
      lowBalanceThreshold: null,
    });
    const got = await t.api("GET", "/v1/accounts/get?accountId=b");
    expect(got.body).toEqual(email.body.account);
  });

  it("refuses a negative or over-precise threshold and an unknown account", async () => {
    await fundedAccount(t, "a");
    for (const lowBalanceThreshold of [-1, 0.0000001, "5"]) {
      const res = await t.api("POST", "/v1/accounts/update", {
        body: { accountId: "a", lowBalanceThreshold },
      });
      expect(res.status).toBe(400);
    }
    const create = await t.api("POST", "/v1/accounts/create", {
      body: { externalId: "c", lowBalanceThreshold: -0.5 },
    });
    expect(create.status).toBe(400);
    const missing = await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "nobody", name: "x" },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("ACCOUNT_NOT_FOUND");
  });
});

describe("webhook endpoints", () => {
  it("creates with a secret shown once, lists without it, deletes once", async () => {
    const res = await t.api("POST", "/v1/webhooks/create", {
      body: { url: "https://example.com/hooks", description: "Billing" },
    });
    expect(res.status).toBe(200);
    const { webhook } = res.body;
    expect(webhook).toMatchObject({
      url: "https://example.com/hooks",
      events: ["balance.low", "reservation.expired", "credits.expired", "plan.granted"],
      description: "Billing",
      isActive: true,
    });
    expect(webhook.id).toMatch(/^wh_/);
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(webhook.secret.slice(6), "base64").length).toBeGreaterThanOrEqual(24);

    const list = await t.api("GET", "/v1/webhooks");
    expect(list.body).toEqual({
      success: true,
      webhooks: [
        {
          id: webhook.id,
          url: webhook.url,
          events: webhook.events,
          description: "Billing",
          isActive: true,
          createdAt: webhook.createdAt,
        },
      ],
    });
    expect(JSON.stringify(list.body)).not.toContain(webhook.secret);

    const del = await t.api("POST", "/v1/webhooks/delete", { body: { webhookId: webhook.id } });
    expect(del.body).toEqual({ success: true, webhookId: webhook.id });
    expect((await t.api("GET", "/v1/webhooks")).body.webhooks).toEqual([]);
    const again = await t.api("POST", "/v1/webhooks/delete", { body: { webhookId: webhook.id } });
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe("WEBHOOK_NOT_FOUND");
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
      const res = await t.api("POST", "/v1/webhooks/create", { body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
    }
    const longest = `https://example.com/${"a".repeat(2048 - 20)}`;
    expect(longest.length).toBe(2048);
    const ok = await t.api("POST", "/v1/webhooks/create", {
      body: { url: longest, events: ["plan.granted", "balance.low", "plan.granted"] },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.webhook.events).toEqual(["balance.low", "plan.granted"]);
  });

  it("keeps projects apart: another project's webhook is 404", async () => {
    const hook = await createHook(t, receiver, "/a");
    const other = await t.newProject("other");
    const del = await t.api("POST", "/v1/webhooks/delete", {
      body: { webhookId: hook },
      key: other.key,
    });
    expect(del.status).toBe(404);
    expect(del.body.error.code).toBe("WEBHOOK_NOT_FOUND");
    const log = await t.api("GET", `/v1/webhooks/deliveries?webhookId=${hook}`, {
      key: other.key,
    });
    expect(log.status).toBe(404);
    expect((await t.api("GET", "/v1/webhooks", { key: other.key })).body.webhooks).toEqual([]);
    const unknown = await t.api("GET", "/v1/webhooks/deliveries?webhookId=wh_nope");
    expect(unknown.body.error.code).toBe("WEBHOOK_NOT_FOUND");
  });
});

describe("balance.low", () => {
  it("fires once per crossing: down, still down, up, down again", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 20);
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "acme", lowBalanceThreshold: 10 },
    });

    expect((await deduct("acme", 5)).status).toBe(200); // 15: above
    const down = await deduct("acme", 6); // 9: crosses
    await receiver.waitFor(() => events().length === 1, 5000, "first balance.low");
    expect((await deduct("acme", 1)).status).toBe(200); // 8: still down
    expect((await add("acme", 1.5)).status).toBe(200); // 9.5: still below
    expect((await deduct("acme", 0.5)).status).toBe(200); // 9: still down
    expect((await add("acme", 1)).status).toBe(200); // 10: back at the threshold
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
        transactionId: down.body.transactionId,
      },
    });
    expect(first?.id).toBe(first?.event.id);
    expect(Object.keys(first?.event ?? {}).sort()).toEqual(["createdAt", "data", "id", "type"]);
    expect(Object.keys(first?.event.data).sort()).toEqual(
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
    expect(second?.event.data.transactionId).toBe(again.body.transactionId);
  });

  it("fires for a reservation (transactionId null) and its confirm; not for a threshold change", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 100);
    // Setting a threshold above available fires nothing, and the next debit does not cross.
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "acme", lowBalanceThreshold: 500 },
    });
    await deduct("acme", 1);
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "acme", lowBalanceThreshold: 50 },
    });
    await settle();
    expect(events()).toEqual([]);

    const hold = await t.api("POST", "/v1/reservations/create", {
      body: { accountId: "acme", amount: 60 },
    });
    expect(hold.status).toBe(200);
    await receiver.waitFor(() => events().length === 1, 5000, "balance.low of the hold");
    expect(events()[0]?.event.data).toMatchObject({
      balance: 99,
      reserved: 60,
      available: 39,
      threshold: 50,
      transactionId: null,
    });
    // Released (confirmed at 0): back above; a second hold, confirmed above its amount, crosses.
    const id = hold.body.reservation.id;
    const confirm0 = await t.api("POST", "/v1/reservations/confirm", {
      body: { reservationId: id, actualAmount: 0 },
    });
    expect(confirm0.status).toBe(200);
    const hold2 = await t.api("POST", "/v1/reservations/create", {
      body: { accountId: "acme", amount: 10 },
    });
    const id2 = hold2.body.reservation.id;
    const confirm = await t.api("POST", "/v1/reservations/confirm", {
      body: { reservationId: id2, actualAmount: 60 },
    });
    expect(confirm.status).toBe(200);
    await receiver.waitFor(() => events().length === 2, 5000, "balance.low of the confirm");
    expect(events()[1]?.event.data).toMatchObject({ balance: 39, reserved: 0, available: 39 });
    expect(events()[1]?.event.data.transactionId).toMatch(/^txn_/);
  });

  it("is not fired by a refused request", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 20);
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "acme", lowBalanceThreshold: 10 },
    });
    const refused = await deduct("acme", 25);
    expect(refused.status).toBe(402);
    const hold = await t.api("POST", "/v1/reservations/create", {
      body: { accountId: "acme", amount: 21 },
    });
    expect(hold.status).toBe(402);
    await settle();
    expect(events()).toEqual([]);
    const log = await t.api(
      "GET",
      `/v1/webhooks/deliveries?webhookId=${(await t.api("GET", "/v1/webhooks")).body.webhooks[0].id}`,
    );
    expect(log.body.deliveries).toEqual([]);
    // The same debit, once it fits, does cross.
    expect((await deduct("acme", 15)).status).toBe(200);
    await receiver.waitFor(() => events().length === 1, 5000, "balance.low");
  });
});

describe("the other events", () => {
  it("reservation.expired carries the Reservation object", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook", ["reservation.expired"]);
    await fundedAccount(t, "acme", 10);
    const hold = await t.api("POST", "/v1/reservations/create", {
      body: { accountId: "acme", amount: 4, ttlSeconds: 1, metadata: { job: "x" } },
    });
    const id = hold.body.reservation.id;
    await new Promise((r) => setTimeout(r, 1100));
    expect(await runExpireReservations({ queue: t.ledger.queue, nowMs: Date.now() })).toBe(1);
    await receiver.waitFor(() => events().length === 1, 5000, "reservation.expired");
    const listed = await t.api("GET", "/v1/reservations?accountId=acme");
    expect(events()[0]?.event.type).toBe("reservation.expired");
    expect(events()[0]?.event.data).toEqual(listed.body.reservations[0]);
    expect(events()[0]?.event.data).toMatchObject({ id, status: "expired", amount: 4 });
  });

  it("credits.expired names the grant and the expiry debit", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook", ["credits.expired"]);
    await fundedAccount(t, "acme", 3);
    const expiresAt = new Date(Date.now() + 1200).toISOString();
    const grant = await t.api("POST", "/v1/accounts/credits/add", {
      body: { accountId: "acme", amount: 2.5, expiresAt },
    });
    expect(grant.status).toBe(200);
    await new Promise((r) => setTimeout(r, 1300));
    await runExpireGrants({ queue: t.ledger.queue, nowMs: Date.now() });
    await receiver.waitFor(() => events().length === 1, 5000, "credits.expired");
    const data = events()[0]?.event.data;
    const txns = await t.api("GET", "/v1/transactions?accountId=acme");
    const expiry = txns.body.items[0];
    expect(expiry.metadata).toMatchObject({
      reason: "credits_expired",
      grantId: grant.body.grantId,
    });
    expect(data).toEqual({
      accountId: expiry.accountId,
      externalId: "acme",
      grantId: grant.body.grantId,
      transactionId: expiry.id,
      amount: 2.5,
      balance: 3,
    });
  });

  it("plan.granted carries the assignment, plan, transaction and period", async () => {
    worker = startWorker(t);
    await createHook(t, receiver, "/hook", ["plan.granted"]);
    await fundedAccount(t, "acme");
    const plan = await t.api("POST", "/v1/plans/create", {
      body: { name: "Pro", amount: 500, interval: "month" },
    });
    const planId = plan.body.plan.id;
    const assigned = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "acme", planId },
    });
    expect(assigned.status).toBe(200);
    await receiver.waitFor(() => events().length === 1, 5000, "plan.granted");
    const { event } = events()[0] ?? { event: undefined };
    const txns = await t.api("GET", "/v1/transactions?accountId=acme");
    const ap = assigned.body.accountPlan;
    expect(event.data).toEqual({
      accountId: txns.body.items[0].accountId,
      externalId: "acme",
      accountPlanId: ap.id,
      planId,
      transactionId: txns.body.items[0].id,
      amount: 500,
      balance: 500,
      periodStart: ap.startedAt,
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
    await t.api("POST", "/v1/webhooks/delete", { body: { webhookId: gone } });
    const other = await t.newProject("other");
    await t.api("POST", "/v1/webhooks/create", {
      body: { url: receiver.url("/other") },
      key: other.key,
    });

    await t.api("POST", "/v1/accounts/create", {
      body: { externalId: "acme", lowBalanceThreshold: 1 },
    });
    const plan = await t.api("POST", "/v1/plans/create", {
      body: { name: "Pro", amount: 2, interval: "month" },
    });
    await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "acme", planId: plan.body.plan.id },
    });
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

    const log = await t.api("GET", `/v1/webhooks/deliveries?webhookId=${all}&limit=1`);
    expect(log.status).toBe(200);
    expect(log.body.pagination).toEqual({ limit: 1, offset: 0, totalCount: 2, hasMore: true });
    expect(log.body.deliveries[0]).toMatchObject({
      eventType: "balance.low",
      status: "delivered",
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expect(log.body.deliveries[0].eventId).toBe(low[0]?.id);
    expect(log.body.deliveries[0].deliveredAt).not.toBeNull();
  });

  it("retries after 500s, then delivers; counts outcomes in /metrics", async () => {
    worker = startWorker(t, { retrySeconds: [0.2, 0.2, 0.2] });
    receiver.answer = (_path, n) => (n <= 2 ? 500 : 204);
    const hook = await createHook(t, receiver, "/hook");
    await t.api("POST", "/v1/accounts/create", {
      body: { externalId: "acme", lowBalanceThreshold: 1 },
    });
    await fundedAccount(t, "b", 2);
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "b", lowBalanceThreshold: 1 },
    });
    await deduct("b", 1.5);
    await receiver.waitFor(() => receiver.delivered.length === 1, 5000, "the delivery");
    expect(receiver.attempts.get("/hook")).toBe(3);
    await settle();
    const log = await t.api("GET", `/v1/webhooks/deliveries?webhookId=${hook}`);
    expect(log.body.deliveries).toHaveLength(1);
    expect(log.body.deliveries[0]).toMatchObject({
      status: "delivered",
      attempts: 3,
      lastStatusCode: 204,
      lastError: null,
    });
    const metrics = await (await t.api("GET", "/metrics")).body;
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="retried"} 2');
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="delivered"} 1');
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="failed"} 0');
    expect(metrics).toContain("ledger_webhook_deliveries_pending 0");
  });

  it("fails after the last retry (a closed port), and a 3xx is not followed", async () => {
    worker = startWorker(t, { retrySeconds: [0.2, 0.2] });
    const port = await closedPort();
    const closed = await createHook(
      t,
      receiver,
      "/closed",
      ["balance.low"],
      `http://127.0.0.1:${port}/x`,
    );
    receiver.answer = (path) => (path === "/redirect" ? 302 : 200);
    const redirect = await createHook(t, receiver, "/redirect", ["balance.low"]);
    await fundedAccount(t, "acme", 2);
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "acme", lowBalanceThreshold: 1 },
    });
    await deduct("acme", 1.5);

    const logOf = async (id: string) =>
      (await t.api("GET", `/v1/webhooks/deliveries?webhookId=${id}`)).body.deliveries[0];
    const deadline = Date.now() + 8000;
    while (
      (await logOf(closed)).status === "pending" ||
      (await logOf(redirect)).status === "pending"
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
    const metrics: string = (await t.api("GET", "/metrics")).body;
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="retried"} 4');
    expect(metrics).toContain('ledger_webhook_deliveries_total{outcome="failed"} 2');
  });

  it("stops delivering to an endpoint once deleted", async () => {
    worker = startWorker(t, { retrySeconds: [0.3, 0.3, 0.3, 0.3] });
    receiver.answer = () => 500;
    const hook = await createHook(t, receiver, "/hook");
    await fundedAccount(t, "acme", 2);
    await t.api("POST", "/v1/accounts/update", {
      body: { accountId: "acme", lowBalanceThreshold: 1 },
    });
    await deduct("acme", 1.5);
    await receiver.waitFor(() => (receiver.attempts.get("/hook") ?? 0) >= 1, 5000, "an attempt");
    await t.api("POST", "/v1/webhooks/delete", { body: { webhookId: hook } });
    const seen = receiver.attempts.get("/hook") ?? 0;
    await new Promise((r) => setTimeout(r, 1000));
    // At most an attempt already on the wire when it was deleted.
    expect(receiver.attempts.get("/hook") ?? 0).toBeLessThanOrEqual(seen + 1);
    const metrics: string = (await t.api("GET", "/metrics")).body;
    expect(metrics).toContain("ledger_webhook_deliveries_pending 0");
  });
});

describe("API latency while a receiver hangs", () => {
  let base: string;
  beforeAll(() => {});
  afterAll(() => {});

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

  it("is unchanged with every worker slot stuck on a receiver that never answers", async () => {
    base = await t.listen();
    await fundedAccount(t, "busy", 100);
    worker = startWorker(t, { timeoutSeconds: 30, concurrency: 8 });
    await p50(100); // warm up
    const without = await p50(200);

    receiver.answer = () => "hang";
    await createHook(t, receiver, "/hang", ["balance.low"]);
    for (let i = 0; i < 12; i++) {
      await fundedAccount(t, `low-${i}`, 2);
      await t.api("POST", "/v1/accounts/update", {
        body: { accountId: `low-${i}`, lowBalanceThreshold: 1 },
      });
      await deduct(`low-${i}`, 1.5);
    }
    await receiver.waitFor(
      () => (receiver.attempts.get("/hang") ?? 0) >= 8,
      5000,
      "hanging attempts",
    );
    const hanging = await p50(200);
    expect(receiver.attempts.get("/hang")).toBe(8);
    process.stdout.write(
      `API p50 deduction: ${without.toFixed(3)} ms without webhooks, ${hanging.toFixed(3)} ms with 8 attempts hanging\n`,
    );
    expect(hanging).toBeLessThanOrEqual(2 * without + 5);
  }, 60_000);
});
