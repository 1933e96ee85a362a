/**
 * `verifyWebhook` of the typed client (docs/api.md#verifying-a-delivery) against real
 * deliveries: the service's delivery worker POSTs one event of each type to a receiver on
 * 127.0.0.1; each verifies with the endpoint's secret, narrows by `type` to data that matches
 * the API's state, and matches its published schema exactly. A tampered body, a timestamp
 * outside the library's 5 minutes, another secret and a missing header are refused.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import type { z } from "@hono/zod-openapi";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LedgerEvent, verifyWebhook, WebhookVerificationError } from "../src/client/index.ts";
import { eventSchema } from "../src/event-webhooks.ts";
import { EVENTS } from "../src/events.ts";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import { runExpireReservations } from "../src/jobs/expire-reservations.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import type { SentEventType } from "../src/webhooks/outbox.ts";
import { expectOk, makeLedger, type TestLedger } from "./harness.ts";
import { startWorker } from "./webhooks-receiver.ts";

/** A delivery as it arrived: the raw body and the request headers. */
interface Delivery {
  body: string;
  headers: IncomingHttpHeaders;
}

describe("verifyWebhook on the service's own deliveries", () => {
  let t: TestLedger;
  let worker: DeliveryWorker;
  let secret: string;
  const deliveries: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      deliveries.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  /** The deliveries of one event type, by the type in their body. */
  const ofType = (type: string) => deliveries.filter((d) => d.body.includes(`"type":"${type}"`));

  beforeAll(async () => {
    t = await makeLedger({ env: { WEBHOOK_ALLOW_PRIVATE: "true" } });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const { webhook } = expectOk(
      await t.client.POST("/v1/webhooks/create", {
        body: { url: `http://127.0.0.1:${port}/ledger` },
      }),
    );
    secret = webhook.secret;
    worker = startWorker(t);

    // One event of each type: a plan grant (10 credits), a deduction taking `available` below 5
    // (an expiring grant of priority 100 stays unspent, so its expiry books 2.5 later, already
    // below the threshold), a hold and that grant running out.
    const { plan } = expectOk(
      await t.client.POST("/v1/plans/create", {
        body: { name: "Pro", amount: 10, interval: "month" },
      }),
    );
    expectOk(
      await t.client.POST("/v1/accounts/create", {
        body: { externalId: "acme", lowBalanceThreshold: 5 },
      }),
    );
    expectOk(
      await t.client.POST("/v1/accounts/plans/assign", {
        body: { accountId: "acme", planId: plan.id },
      }),
    );
    expectOk(
      await t.client.POST("/v1/accounts/credits/add", {
        body: {
          accountId: "acme",
          amount: 2.5,
          priority: 100,
          expiresAt: new Date(Date.now() + 1200).toISOString(),
        },
      }),
    );
    expectOk(
      await t.client.POST("/v1/accounts/credits/deduct", {
        body: { accountId: "acme", amount: 8 },
      }),
    );
    expectOk(
      await t.client.POST("/v1/reservations/create", {
        body: { accountId: "acme", amount: 1, ttlSeconds: 1 },
      }),
    );
    await new Promise((r) => setTimeout(r, 1300));
    expect(await runExpireReservations({ queue: t.ledger.queue, nowMs: Date.now() })).toBe(1);
    await runExpireGrants({ queue: t.ledger.queue, nowMs: Date.now() });
    const deadline = Date.now() + 10_000;
    while (deliveries.length < 4 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    // Time for a delivery that should not exist to arrive too.
    await new Promise((r) => setTimeout(r, 300));
  }, 30_000);

  afterAll(async () => {
    await worker?.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await t.close();
  });

  it("verifies each delivery and narrows it by type to what the API shows", async () => {
    expect(deliveries.map((d) => JSON.parse(d.body).type).sort()).toEqual(
      ["balance.low", "credits.expired", "plan.granted", "reservation.expired"].sort(),
    );
    const account = expectOk(
      await t.client.GET("/v1/accounts/get", { params: { query: { accountId: "acme" } } }),
    );
    const { items } = expectOk(
      await t.client.GET("/v1/transactions", { params: { query: { accountId: "acme" } } }),
    );
    const seen: string[] = [];
    for (const { body, headers } of deliveries) {
      const event: LedgerEvent = verifyWebhook(body, headers, secret);
      expect(event.id).toBe(headers["webhook-id"]);
      // @ts-expect-error only `balance.low` has a threshold: narrow by `type` first
      expect(event.data.threshold === undefined).toBe(event.type !== "balance.low");
      switch (event.type) {
        case "balance.low":
          expect(event.data).toEqual({
            accountId: account.id,
            externalId: "acme",
            balance: 4.5,
            reserved: 0,
            available: 4.5,
            threshold: 5,
            transactionId: items.find((i) => i.type === "debit" && i.amount === 8)?.id,
          });
          break;
        case "plan.granted":
          expect(event.data).toMatchObject({ externalId: "acme", amount: 10, balance: 10 });
          break;
        case "reservation.expired":
          expect(event.data).toMatchObject({ accountId: account.id, amount: 1, status: "expired" });
          break;
        case "credits.expired":
          expect(event.data).toMatchObject({ externalId: "acme", amount: 2.5, balance: 2 });
          break;
      }
      seen.push(event.type);
      // The published schema of the type, with no field missing or extra.
      const parsed = JSON.parse(body);
      const definition: { type: SentEventType; data: z.ZodObject } = EVENTS[event.type];
      eventSchema(definition).strict().parse(parsed);
      definition.data.strict().parse(parsed.data);
    }
    expect(seen).toHaveLength(4);
  });

  it("takes the body as bytes and the headers as a fetch Headers", () => {
    const [first] = deliveries;
    if (!first) throw new Error("no delivery");
    const headers = new Headers();
    for (const [name, value] of Object.entries(first.headers)) {
      if (typeof value === "string") headers.set(name, value);
    }
    const bytes = new TextEncoder().encode(first.body);
    expect(verifyWebhook(bytes, headers, secret)).toEqual(
      verifyWebhook(first.body, first.headers, secret),
    );
  });

  it("refuses a tampered body, another secret and a missing header", () => {
    const [delivery] = ofType("balance.low");
    if (!delivery) throw new Error("no balance.low delivery");
    const refuse = (body: string, headers: IncomingHttpHeaders, key = secret) =>
      expect(() => verifyWebhook(body, headers, key)).toThrow(WebhookVerificationError);
    refuse(delivery.body.replace('"threshold":5', '"threshold":6'), delivery.headers);
    refuse(`${delivery.body} `, delivery.headers);
    refuse(delivery.body, delivery.headers, `whsec_${btoa("another secret of 32 bytes......")}`);
    const { "webhook-signature": _, ...unsigned } = delivery.headers;
    refuse(delivery.body, unsigned);
  });

  it("refuses a rightly signed delivery whose timestamp is outside 5 minutes", () => {
    const [delivery] = ofType("plan.granted");
    if (!delivery) throw new Error("no plan.granted delivery");
    const id = String(delivery.headers["webhook-id"]);
    /** The delivery signed with the endpoint's secret at `offsetSeconds` from now. */
    const signedAt = (offsetSeconds: number) => {
      const at = new Date(Date.now() + offsetSeconds * 1000);
      return {
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": new Webhook(secret).sign(id, at, delivery.body),
      };
    };
    expect(verifyWebhook(delivery.body, signedAt(-240), secret).type).toBe("plan.granted");
    expect(() => verifyWebhook(delivery.body, signedAt(-360), secret)).toThrow(/too old/);
    expect(() => verifyWebhook(delivery.body, signedAt(360), secret)).toThrow(/too new/);
    expect(() => verifyWebhook(delivery.body, signedAt(-360), secret)).toThrow(
      WebhookVerificationError,
    );
  });
});
