/**
 * Managing webhook endpoints (docs/api.md#managing-webhook-endpoints), over real HTTP with the
 * typed client against a listening server, every delivery to a loopback receiver that verifies
 * it with the `standardwebhooks` library: update, pause and resume, a new secret, the test
 * event, a new attempt of a failed delivery, and a deleted endpoint's deliveries.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LedgerClient } from "../src/client/index.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import { expectFailure, expectOk, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { createHook, type Receiver, startReceiver, startWorker } from "./webhooks-receiver.ts";

let t: TestLedger;
let client: LedgerClient;
let receiver: Receiver;
let worker: DeliveryWorker | undefined;

beforeEach(async () => {
  t = await makeLedger();
  client = t.clientFor(t.key, await t.listen());
  receiver = await startReceiver();
});

afterEach(async () => {
  await worker?.stop();
  worker = undefined;
  await receiver.close();
  await t.close();
});

/** Lets the worker look for due deliveries a few times. */
const settle = () => new Promise((r) => setTimeout(r, 400));

const deliveriesOf = async (webhookId: string) =>
  expectOk(await client.GET("/v1/webhooks/deliveries", { params: { query: { webhookId } } }))
    .deliveries;

/** An account at `balance` with a low-balance threshold of 5 (a debit below it fires). */
async function accountWithThreshold(externalId: string, balance: number) {
  const id = await fundedAccount(t, externalId, balance);
  expectOk(
    await client.POST("/v1/accounts/update", { body: { accountId: id, lowBalanceThreshold: 5 } }),
  );
  return id;
}

describe("POST /v1/webhooks/update", () => {
  it("changes only the fields given, and refuses an unknown endpoint", async () => {
    const id = await createHook(t, receiver, "/a");
    const { webhook } = expectOk(
      await client.POST("/v1/webhooks/update", {
        body: { webhookId: id, events: ["plan.granted"], description: "billing" },
      }),
    );
    expect(webhook).toMatchObject({
      id,
      url: receiver.url("/a"),
      events: ["plan.granted"],
      description: "billing",
      isActive: true,
    });
    expect(webhook).not.toHaveProperty("secret");
    const moved = expectOk(
      await client.POST("/v1/webhooks/update", {
        body: { webhookId: id, url: receiver.url("/b") },
      }),
    );
    expect(moved.webhook).toMatchObject({ url: receiver.url("/b"), events: ["plan.granted"] });
    expectFailure(
      await client.POST("/v1/webhooks/update", { body: { webhookId: "wh_nope", isActive: false } }),
      404,
      "WEBHOOK_NOT_FOUND",
    );
  });

  it("pauses delivery: events queue, nothing is sent until it is active again", async () => {
    const id = await createHook(t, receiver, "/paused");
    worker = startWorker(t);
    const paused = expectOk(
      await client.POST("/v1/webhooks/update", { body: { webhookId: id, isActive: false } }),
    );
    expect(paused.webhook.isActive).toBe(false);
    const listed = expectOk(await client.GET("/v1/webhooks", { params: { query: {} } }));
    expect(listed.webhooks.map((w) => [w.id, w.isActive])).toEqual([[id, false]]);

    const account = await accountWithThreshold("paused-acct", 10);
    expectOk(
      await client.POST("/v1/accounts/credits/deduct", { body: { accountId: account, amount: 8 } }),
    );
    expectOk(await client.POST("/v1/webhooks/test", { body: { webhookId: id } }));
    await settle();
    expect(receiver.attempts.get("/paused")).toBeUndefined();
    const waiting = await deliveriesOf(id);
    expect(waiting.map((d) => [d.eventType, d.status, d.attempts]).sort()).toEqual([
      ["balance.low", "pending", 0],
      ["webhook.test", "pending", 0],
    ]);

    expectOk(await client.POST("/v1/webhooks/update", { body: { webhookId: id, isActive: true } }));
    await receiver.waitFor(() => receiver.delivered.length === 2, 10_000, "both deliveries");
    expect(receiver.delivered.map((d) => d.event.type).sort()).toEqual([
      "balance.low",
      "webhook.test",
    ]);
    expect(receiver.invalid).toEqual([]);
  });
});

describe("POST /v1/webhooks/rotate-secret", () => {
  it("answers a new secret, which signs the next delivery; the old one no longer does", async () => {
    const id = await createHook(t, receiver, "/rotated");
    const { webhook: before } = expectOk(
      await client.POST("/v1/webhooks/update", { body: { webhookId: id } }),
    );
    const { webhook } = expectOk(
      await client.POST("/v1/webhooks/rotate-secret", { body: { webhookId: id } }),
    );
    expect(webhook).toMatchObject({ ...before });
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // The receiver knows only the new secret: a delivery signed with the old one is invalid.
    receiver.setSecret("/rotated", webhook.secret);
    worker = startWorker(t);
    expectOk(await client.POST("/v1/webhooks/test", { body: { webhookId: id } }));
    await receiver.waitFor(() => receiver.delivered.length === 1, 10_000, "the test event");
    expect(receiver.invalid).toEqual([]);
    const listed = expectOk(await client.GET("/v1/webhooks", { params: { query: {} } }));
    expect(JSON.stringify(listed)).not.toContain(webhook.secret);
  });
});

describe("POST /v1/webhooks/test", () => {
  it("sends a webhook.test event to that endpoint alone, whatever it subscribes to", async () => {
    const id = await createHook(t, receiver, "/tested", ["plan.granted"]);
    await createHook(t, receiver, "/other");
    worker = startWorker(t);
    const sent = expectOk(await client.POST("/v1/webhooks/test", { body: { webhookId: id } }));
    expect(sent.delivery).toMatchObject({
      eventId: sent.eventId,
      eventType: "webhook.test",
      status: "pending",
      attempts: 0,
    });
    await receiver.waitFor(() => receiver.delivered.length === 1, 10_000, "the test event");
    await settle();
    const [arrived] = receiver.delivered;
    expect(arrived?.path).toBe("/tested");
    expect(arrived?.id).toBe(sent.eventId);
    expect(arrived?.event).toMatchObject({ type: "webhook.test", data: { webhookId: id } });
    expect(receiver.attempts.get("/other")).toBeUndefined();
  });
});

describe("POST /v1/webhooks/deliveries/retry", () => {
  it("attempts a failed delivery once more at once, and it arrives", async () => {
    const id = await createHook(t, receiver, "/flaky");
    let down = true;
    receiver.answer = () => (down ? 503 : 200);
    worker = startWorker(t, { retrySeconds: [] });
    const sent = expectOk(await client.POST("/v1/webhooks/test", { body: { webhookId: id } }));
    const deliveryId = sent.delivery.id;
    const failed = async () => (await deliveriesOf(id))[0]?.status === "failed";
    for (let i = 0; i < 100 && !(await failed()); i++) await settle();
    const [gaveUp] = await deliveriesOf(id);
    expect(gaveUp).toMatchObject({ id: deliveryId, status: "failed", attempts: 1 });

    down = false;
    const retried = expectOk(
      await client.POST("/v1/webhooks/deliveries/retry", { body: { deliveryId } }),
    );
    expect(retried.delivery).toMatchObject({ id: deliveryId, status: "pending", attempts: 1 });
    await receiver.waitFor(() => receiver.delivered.length === 1, 10_000, "the retried delivery");
    expect(receiver.delivered[0]?.id).toBe(sent.eventId);
    for (let i = 0; i < 50 && (await deliveriesOf(id))[0]?.status !== "delivered"; i++) {
      await settle();
    }
    expect((await deliveriesOf(id))[0]).toMatchObject({ status: "delivered", attempts: 2 });

    const again = await client.POST("/v1/webhooks/deliveries/retry", { body: { deliveryId } });
    const error = expectFailure(again, 409, "DELIVERY_NOT_FAILED");
    expect(error.error.details).toEqual({ status: "delivered" });
    expectFailure(
      await client.POST("/v1/webhooks/deliveries/retry", { body: { deliveryId: "whd_nope" } }),
      404,
      "DELIVERY_NOT_FOUND",
    );
  });

  it("refuses another project's delivery as not found", async () => {
    const id = await createHook(t, receiver, "/mine");
    const sent = expectOk(await client.POST("/v1/webhooks/test", { body: { webhookId: id } }));
    const other = await t.newProject("other");
    const theirs = t.clientFor(other.key);
    expectFailure(
      await theirs.POST("/v1/webhooks/deliveries/retry", {
        body: { deliveryId: sent.delivery.id },
      }),
      404,
      "DELIVERY_NOT_FOUND",
    );
  });
});

describe("a deleted endpoint's deliveries", () => {
  it("stay listable, and cannot be retried", async () => {
    const id = await createHook(t, receiver, "/gone");
    const sent = expectOk(await client.POST("/v1/webhooks/test", { body: { webhookId: id } }));
    expectOk(await client.POST("/v1/webhooks/delete", { body: { webhookId: id } }));
    const listed = await deliveriesOf(id);
    expect(listed).toEqual([
      expect.objectContaining({
        id: sent.delivery.id,
        status: "failed",
        lastError: "webhook deleted",
      }),
    ]);
    expectFailure(
      await client.POST("/v1/webhooks/deliveries/retry", {
        body: { deliveryId: sent.delivery.id },
      }),
      404,
      "WEBHOOK_NOT_FOUND",
    );
    expectFailure(
      await client.POST("/v1/webhooks/update", { body: { webhookId: id, isActive: true } }),
      404,
      "WEBHOOK_NOT_FOUND",
    );
  });
});
