/**
 * An automatic top-up survives `kill -9` (contract section 26, docs/api.md#the-attempt), with real
 * `ledger serve` processes on every engine (a database file on SQLite, since the process is
 * killed; a database of the cluster on PostgreSQL): a deduction crosses the threshold, the
 * serving process's worker asks the Stripe fake for the PaymentIntent, and the fake receives it,
 * creates it and never answers (`hang`); the process is killed with SIGKILL while Stripe has the
 * request, and the fake, as Stripe does, completes the request without its client and keeps the
 * answer under its Idempotency-Key. A new `ledger serve` on the same database, its claim lease
 * at 1 s (AUTO_TOPUP_LEASE_SECONDS), retries the attempt with the same key and body once the
 * dead process's claim runs out, gets the same PaymentIntent, succeeded, and grants it: one
 * PaymentIntent, one charge, one purchase, one credit, the balance exact, and `ledger verify`
 * passes. The servers call the fake on 127.0.0.1, never Stripe. Needs `npm run build` (dist/).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type AutoTopup, autoTopupOf } from "./auto-topup-helpers.ts";
import { fetchFrom, sendJson } from "./http-client.ts";
import { freshDatabase } from "./pg-harness.ts";
import { type RunningProcess, runCliAsync, spawnServer } from "./processes.ts";
import { type StripeFake, type StripeObject, startStripeFake } from "./stripe-fake.ts";
import { purchasesOf } from "./stripe-helpers.ts";

/** The bootstrap project's name (src/bootstrap.ts). */
const PROJECT = "default";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function stop(server: RunningProcess) {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill("SIGTERM");
  await server.exited;
}

/** A customer of the fake whose default payment method is a card. @returns both ids */
function seedCustomer(fake: StripeFake): { customer: string; card: string } {
  const customer = `cus_${randomBytes(9).toString("hex")}`;
  const card = `pm_${randomBytes(9).toString("hex")}`;
  fake.customers.set(customer, {
    id: customer,
    object: "customer",
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    metadata: {},
    invoice_settings: { default_payment_method: card, custom_fields: null, footer: null },
  });
  fake.paymentMethods.set(card, {
    id: card,
    object: "payment_method",
    type: "card",
    customer,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
  });
  return { customer, card };
}

describe("an automatic top-up across kill -9", () => {
  it("charges once and grants once when the service dies while Stripe has the request", async () => {
    const apiKey = `ldg_topup_${randomBytes(16).toString("hex")}`;
    const dir = mkdtempSync(join(tmpdir(), "ledger-topup-"));
    const database = await freshDatabase(dir);
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => database.drop(),
    );
    const fake = await startStripeFake();
    cleanup.push(() => fake.close());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...database.env,
      LEDGER_BOOTSTRAP_API_KEY: apiKey,
      STRIPE_API_URL: fake.url,
      AUTO_TOPUP_POLL_MS: "50",
      AUTO_TOPUP_LEASE_SECONDS: "1",
      LOG_LEVEL: "warn",
    };
    const secretKey = `sk_test_${randomBytes(16).toString("hex")}`;
    fake.secretKey = secretKey;
    const { customer } = seedCustomer(fake);
    // The first PaymentIntent is received and created, and never answered.
    let created: StripeObject | undefined;
    fake.onIntentCreated = (intent) => {
      created = intent;
    };
    fake.intentOutcomes.push({ result: "hang" });

    const first = await spawnServer(env);
    cleanup.push(() => stop(first));
    const stripeSet = await runCliAsync(
      [
        "stripe",
        "set",
        "--project",
        PROJECT,
        "--webhook-secret",
        `whsec_${randomBytes(24).toString("base64url")}`,
        "--secret-key",
        secretKey,
      ],
      env,
    );
    expect(stripeSet.status, stripeSet.stderr).toBe(0);
    const api = (server: RunningProcess, method: string, path: string, body?: unknown) =>
      sendJson(fetchFrom(server.base), apiKey, method, path, { body });
    const ok = async (server: RunningProcess, method: string, path: string, body?: unknown) => {
      const reply = await api(server, method, path, body);
      expect(reply.status, `${method} ${path}: ${reply.text}`).toBe(200);
      return reply;
    };
    // A credit costs 10 cents.
    await ok(first, "POST", "/v1/project/update", { creditsPerUsd: 10 });
    const created1 = await ok(first, "POST", "/v1/accounts/create", {
      externalId: "u1",
      stripeCustomerId: customer,
    });
    const accountId = (created1.body as { account: { id: string } }).account.id;
    await ok(first, "POST", "/v1/accounts/credits/add", { accountId: "u1", amount: 100 });
    const settings = { accountId: "u1", enabled: true, threshold: 50, amount: 60 };
    // The running service sees the secret key within 5 s.
    await waitFor(
      async () => (await api(first, "POST", "/v1/accounts/auto-topup", settings)).status === 200,
      6_000,
      "top-up enabled",
    );
    await ok(first, "POST", "/v1/accounts/credits/deduct", { accountId: "u1", amount: 60 });
    const topup = async (server: RunningProcess) =>
      autoTopupOf(await api(server, "GET", "/v1/accounts/auto-topup?accountId=u1")) as AutoTopup;
    const attempt = (await topup(first)).lastAttempt;
    expect(attempt).toMatchObject({ status: "pending", credits: 60, amountCents: 600 });

    // Within 5 s the worker asks Stripe; Stripe has the request and creates the PaymentIntent.
    await waitFor(() => created !== undefined && fake.pending() === 1, 5_000, "PaymentIntent");
    expect(fake.requestsTo("/v1/payment_intents", "POST")).toHaveLength(1);
    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    // Its client gone, Stripe's request completes: the answer is kept under the key.
    await waitFor(() => fake.pending() === 0, 5_000, "the hanging request closed");
    expect(fake.idempotency.has(attempt?.id as string)).toBe(true);
    expect(fake.paymentIntents.get(created?.id as string)?.status).toBe("succeeded");

    // A new process on the same database retries once the dead one's claim has run out.
    const second = await spawnServer(env);
    cleanup.push(() => stop(second));
    await waitFor(
      async () => (await topup(second)).lastAttempt?.status !== "pending",
      15_000,
      "the attempt ended",
    );
    const after = await topup(second);
    expect(after).toMatchObject({
      enabled: true,
      toppedUpThisMonth: 60,
      consecutiveFailures: 0,
      lastAttempt: {
        id: attempt?.id,
        status: "succeeded",
        reason: null,
        credits: 60,
        amountCents: 600,
        paymentIntentId: created?.id,
      },
    });
    // One PaymentIntent: every request carried the attempt's key and the same body, and every
    // one after the first was answered with the first's PaymentIntent.
    const posts = fake.requestsTo("/v1/payment_intents", "POST");
    expect(posts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(posts.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([attempt?.id]));
    expect(new Set(posts.map((r) => r.rawBody)).size).toBe(1);
    expect(posts.slice(1).every((r) => r.replayed && r.status === 200)).toBe(true);
    expect(posts[0]?.status).toBeUndefined();
    expect(fake.paymentIntents.size).toBe(1);
    const charges = [...fake.charges.values()].filter((c) => c.status === "succeeded");
    expect(charges.map((c) => c.payment_intent)).toEqual([created?.id]);

    // One grant.
    const { purchases } = purchasesOf(await ok(second, "GET", "/v1/purchases?limit=100"));
    expect(purchases).toHaveLength(1);
    expect(purchases[0]).toMatchObject({
      accountId,
      paymentIntentId: created?.id,
      credits: 60,
      amountPaid: 600,
      currency: "usd",
      status: "paid",
    });
    const balance = await ok(second, "GET", "/v1/accounts/balance?accountId=u1");
    expect(balance.body).toMatchObject({ balance: 100, reserved: 0, available: 100 });
    const txns = await ok(second, "GET", "/v1/transactions?accountId=u1&limit=100");
    const items = (txns.body as { items: { id: string; type: string; amount: number }[] }).items;
    expect(items.map((x) => [x.type, x.amount]).reverse()).toEqual([
      ["credit", 100],
      ["debit", 60],
      ["credit", 60],
    ]);
    expect(items[0]?.id).toBe(purchases[0]?.transactionId);

    // Nothing more happens once the lease would have run out again.
    const calls = fake.requests.length;
    await new Promise((r) => setTimeout(r, 1_500));
    expect(fake.requests.length).toBe(calls);
    expect(purchasesOf(await ok(second, "GET", "/v1/purchases")).purchases).toHaveLength(1);

    await stop(second);
    const verified = await runCliAsync(["verify"], env);
    expect(verified.stdout, verified.stderr).toMatch(/verified \d+ accounts, \d+ transactions: OK/);
    expect(verified.status).toBe(0);
  }, 60_000);
});
