/**
 * Selling credits through Stripe across processes (contract section 25): two `ledger serve`
 * processes on one PostgreSQL database, the project connected and disconnected by the operator's
 * `ledger stripe set` / `unset` while they run (each server sees the change within 5 s). A
 * payment's checkout session, invoice and PaymentIntent events, each delivered 5 times, all at
 * once and spread over both servers, grant its credits exactly once: one purchase, one credit,
 * each event listed once with its 5 deliveries; then a refund's and a dispute's events, 5 times
 * each over both servers, take back exactly their share. The secrets appear in no server log, and `ledger
 * verify` passes. The servers call a Stripe fake on 127.0.0.1, never Stripe. PostgreSQL only
 * (the suite's postgres project).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStatuses, fetchFrom, sendJson } from "./http-client.ts";
import { createPgDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type RunningProcess, runCliAsync, spawnServer } from "./processes.ts";
import {
  dispute,
  LEGACY_API_VERSION,
  sale,
  seconds,
  signedDelivery,
  stripeEvent,
} from "./stripe-events.ts";
import { type StripeFake, startStripeFake } from "./stripe-fake.ts";
import { eventsOf, purchasesOf } from "./stripe-helpers.ts";

/** The bootstrap project's name (src/bootstrap.ts). */
const PROJECT = "default";

describe.runIf(TEST_ENGINE === "postgres")("Stripe events across two servers", () => {
  const apiKey = `ldg_stripe_${randomBytes(16).toString("hex")}`;
  const secret = `whsec_${randomBytes(24).toString("base64url")}`;
  const secretKey = `sk_test_${randomBytes(16).toString("hex")}`;
  let database: { url: string; drop: () => Promise<void> };
  let fake: StripeFake;
  let env: NodeJS.ProcessEnv;
  let servers: RunningProcess[] = [];
  let projectId = "";

  beforeAll(async () => {
    database = await createPgDatabase();
    fake = await startStripeFake();
    env = {
      ...process.env,
      DATABASE_URL: database.url,
      LEDGER_BOOTSTRAP_API_KEY: apiKey,
      STRIPE_API_URL: fake.url,
      LOG_LEVEL: "info",
    };
    servers = await Promise.all([spawnServer(env), spawnServer(env)]);
    const project = await sendJson(fetchFrom(`${servers[0]?.base}`), apiKey, "GET", "/v1/project");
    expect(project.status, project.text).toBe(200);
    projectId = (project.body as { project: { id: string } }).project.id;
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill("SIGTERM");
    await Promise.all(servers.map((s) => s.exited));
    await fake?.close();
    await database?.drop();
  }, 60_000);

  const api = (server: number, method: string, path: string, body?: unknown) =>
    sendJson(fetchFrom(`${servers[server]?.base}`), apiKey, method, path, { body });

  /** Posts `body` signed with `key` at now to server `server`'s webhook route. */
  const post = async (server: number, body: string, key = secret) => {
    const delivery = signedDelivery(key, body, { timestamp: seconds(Date.now()) });
    const res = await fetch(`${servers[server]?.base}/stripe/webhooks/${projectId}`, {
      method: "POST",
      headers: delivery.headers,
      body: delivery.body,
    });
    return { status: res.status, text: await res.text() };
  };

  /**
   * Waits until both servers answer a delivery signed with a wrong secret with `status` (404
   * while the project is not connected, 400 once it is): such a delivery changes nothing.
   * @returns how long it took (ms)
   */
  const bothAnswer = async (status: number) => {
    const start = Date.now();
    const probe = JSON.stringify(stripeEvent("customer.created", { id: "cus_probe", created: 1 }));
    for (;;) {
      const answers = await Promise.all([0, 1].map((i) => post(i, probe, "whsec_wrong_secret_0")));
      if (answers.every((a) => a.status === status)) return Date.now() - start;
      if (Date.now() - start > 8_000) {
        throw new Error(`still ${JSON.stringify(answers)} after 8 s (expected ${status})`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const cli = async (args: string[]) => {
    const result = await runCliAsync(args, env);
    expect(result.status, result.stderr).toBe(0);
    for (const text of [result.stdout, result.stderr]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secretKey);
    }
    return result;
  };

  it("are granted once whichever server each of 5 deliveries of 3 events reaches", async () => {
    expect(await bothAnswer(404)).toBeLessThan(1_000);
    // A secret of the wrong form is refused, and not echoed.
    const refused = await runCliAsync(
      ["stripe", "set", "--project", PROJECT, "--webhook-secret", "not-a-whsec-secret"],
      env,
    );
    expect(refused.status).not.toBe(0);
    expect(refused.stdout + refused.stderr).not.toContain("not-a-whsec-secret");
    expect(await bothAnswer(404)).toBeLessThan(1_000);
    await cli([
      "stripe",
      "set",
      "--project",
      PROJECT,
      "--webhook-secret",
      secret,
      "--secret-key",
      secretKey,
    ]);
    // A running service sees the change within 5 s.
    expect(await bothAnswer(400)).toBeLessThan(6_000);
    const project = await api(1, "GET", "/v1/project");
    expect((project.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: true,
      secretKeySet: true,
    });

    const created = await api(0, "POST", "/v1/accounts/create", { externalId: "u1" });
    expect(created.status, created.text).toBe(200);
    const accountId = (created.body as { account: { id: string } }).account.id;
    const s = sale({
      amount: 1000,
      created: seconds(Date.now()),
      clientReferenceId: "u1",
      metadata: { ledger_account: "u1", ledger_credits: "100" },
    });
    const events = [
      stripeEvent("checkout.session.completed", s.session),
      stripeEvent("invoice.paid", s.invoice, { apiVersion: LEGACY_API_VERSION }),
      stripeEvent("payment_intent.succeeded", s.intent),
    ];
    const bodies = events.map((e) => JSON.stringify(e, null, 2));
    // Delivery i carries event i % 3 to server i % 2: each event reaches both servers.
    const replies = await Promise.all(
      Array.from({ length: 15 }, (_, i) => post(i % 2, bodies[i % 3] as string)),
    );
    const statuses = countStatuses(replies);
    expect(
      Object.keys(statuses).every((k) => Number(k) >= 200 && Number(k) < 300),
      JSON.stringify(replies),
    ).toBe(true);

    const { purchases } = purchasesOf(await api(1, "GET", "/v1/purchases?limit=100"));
    expect(purchases).toHaveLength(1);
    expect(purchases[0]).toMatchObject({
      accountId,
      externalId: "u1",
      paymentIntentId: s.paymentIntentId,
      credits: 100,
      amountPaid: 1000,
      currency: "usd",
      status: "paid",
    });
    const balance = await api(0, "GET", "/v1/accounts/balance?accountId=u1");
    expect(balance.body).toMatchObject({ balance: 100, reserved: 0, available: 100 });
    const txns = await api(1, "GET", "/v1/transactions?accountId=u1&limit=100");
    const items = (txns.body as { items: { id: string; type: string; amount: number }[] }).items;
    expect(items.map((x) => [x.id, x.type, x.amount])).toEqual([
      [purchases[0]?.transactionId, "credit", 100],
    ]);
    const listed = eventsOf(await api(0, "GET", "/v1/stripe/events?limit=100")).events;
    expect(listed.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(listed.map((e) => e.deliveries)).toEqual([5, 5, 5]);
    expect(listed.map((e) => e.outcome).sort()).toEqual(["applied", "duplicate", "duplicate"]);
    expect(listed.find((e) => e.outcome === "applied")?.purchaseId).toBe(purchases[0]?.id);

    // A refund of 30% and a dispute of 20%, 5 deliveries each, at once over both servers.
    const chargeAt = seconds(Date.now());
    const adjustments = [
      stripeEvent("charge.refunded", { ...s.charge, amount_refunded: 300 }),
      stripeEvent(
        "charge.dispute.funds_withdrawn",
        dispute({
          amount: 200,
          charge: s.chargeId,
          paymentIntent: s.paymentIntentId,
          created: chargeAt,
        }),
      ),
    ].map((e) => JSON.stringify(e, null, 2));
    const adjusted = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        post(Math.floor(i / 2) % 2, adjustments[i % 2] as string),
      ),
    );
    expect(
      adjusted.every((r) => r.status >= 200 && r.status < 300),
      JSON.stringify(adjusted),
    ).toBe(true);
    const [p] = purchasesOf(await api(0, "GET", "/v1/purchases")).purchases;
    expect(p).toMatchObject({
      amountRefunded: 300,
      creditsClawedBack: 50,
      creditsUncollected: 0,
      status: "disputed",
    });
    const after50 = await api(1, "GET", "/v1/accounts/balance?accountId=u1");
    expect(after50.body).toMatchObject({ balance: 50 });

    const verified = await runCliAsync(["verify"], env);
    expect(verified.stdout).toMatch(/verified \d+ accounts, \d+ transactions: OK/);
    expect(verified.status).toBe(0);

    await cli(["stripe", "unset", "--project", PROJECT]);
    expect(await bothAnswer(404)).toBeLessThan(6_000);
    const after = await api(0, "GET", "/v1/project");
    expect((after.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: false,
      secretKeySet: false,
    });
    // The purchase stays.
    expect(purchasesOf(await api(0, "GET", "/v1/purchases")).purchases).toHaveLength(1);
    // No secret in any server's log.
    for (const server of servers) {
      for (const text of [server.stdout(), server.stderr()]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secretKey);
      }
    }
    // Nothing called Stripe: every event carried what it needed.
    expect(fake.requests).toEqual([]);
  }, 60_000);
});
