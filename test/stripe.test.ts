/**
 * Selling credits through Stripe over real HTTP (docs/api.md#selling-credits-through-stripe,
 * contract section 25), on every engine: signed events posted to `POST
 * /stripe/webhooks/{projectId}` grant a payment's credits exactly once, whichever of its
 * session's, invoice's and PaymentIntent's events come and however often, even all at once (and
 * ten payments to one account at once); only paid payments that name the ledger grant, to the
 * account the first present of its names gives, for the credits their metadata or the project's
 * credit price gives (rounded down to the micro-credit), with the priority and expiry their
 * metadata sets; refunds and disputes take credits back to floor(share × credits) as reversals
 * (the purchase's credit, then its restores, newest first) and give them back as restores, what
 * is already spent or held recorded as uncollected and never below zero; a refund before its
 * payment waits; any order of the same events ends the same; an invoice without
 * `payment_intent` is resolved through Stripe's API (the fake of test/stripe-fake.ts) with the
 * secret key, and not accepted while that API fails; bad, stale or future signatures, and
 * unknown or unconnected projects, change nothing. Purchases and Stripe events read back with
 * exactly the contract's fields, newest first, and outlive webhook retention. A fake clock keeps
 * time deterministic, and signatures are made at its time. After each test `ledger verify`'s
 * checks find nothing.
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { runPurgeWebhooks } from "../src/jobs/purge-webhooks.ts";
import { disconnectStripe } from "../src/stripe/settings.ts";
import { expectError } from "./contract.ts";
import { sendJson } from "./http-client.ts";
import { TEST_ENGINE, testPgUrl } from "./pg-harness.ts";
import {
  CURRENT_API_VERSION,
  checkoutSession,
  dispute,
  invoice,
  invoicePayment,
  LEGACY_API_VERSION,
  type Metadata,
  paymentIntent,
  refund,
  type Sale,
  type StripeEvent,
  sale,
  signedDelivery,
  stripeEvent,
} from "./stripe-events.ts";
import { stripeId } from "./stripe-fake.ts";
import {
  accepted,
  DAY,
  eventsOf as eventsPage,
  type Purchase,
  purchasesOf,
  SECRET_KEY,
  type StripeLedger,
  stripeLedger,
  WEBHOOK_SECRET,
} from "./stripe-helpers.ts";

const open: StripeLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) {
    try {
      expect(await l.t.verify()).toEqual([]);
    } finally {
      await l.close();
    }
  }
});

async function ledger(options: Parameters<typeof stripeLedger>[0] = {}) {
  const l = await stripeLedger(options);
  open.push(l);
  return l;
}

/**
 * The deadlocks PostgreSQL counted in the database `url` names, read once its sessions (the
 * ledger's pool, idle) are ended: a session flushes its statistics when it ends.
 */
async function deadlocksOf(url: string): Promise<number> {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: testPgUrl() });
  await admin.connect();
  try {
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [
      name,
    ]);
    const read = () =>
      admin.query<{ backends: number; deadlocks: string }>(
        "SELECT numbackends AS backends, deadlocks FROM pg_stat_database WHERE datname = $1",
        [name],
      );
    for (let waited = 0; (await read()).rows[0]?.backends !== 0 && waited < 5000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    return Number((await read()).rows[0]?.deadlocks);
  } finally {
    await admin.end();
  }
}

/** The three events of a sale that may grant: its session's, its invoice's, its PaymentIntent's. */
function paymentEvents(s: Sale) {
  return {
    completed: stripeEvent("checkout.session.completed", s.session),
    invoicePaid: stripeEvent("invoice.paid", s.invoice, { apiVersion: LEGACY_API_VERSION }),
    succeeded: stripeEvent("payment_intent.succeeded", s.intent),
  };
}

/** `charge.refunded` of the sale's charge, `amountRefunded` refunded so far. */
function refunded(s: Sale, amountRefunded: number, created?: number) {
  const object = {
    ...s.charge,
    amount_refunded: amountRefunded,
    refunded: amountRefunded >= (s.charge.amount as number),
  };
  return stripeEvent("charge.refunded", object, created === undefined ? {} : { created });
}

/** `charge.dispute.funds_withdrawn` / `funds_reinstated` of one dispute of the sale's charge. */
function disputeEvents(s: Sale, amount: number, created: number) {
  const id = stripeId("dp");
  const of = (status: string) =>
    dispute({
      id,
      amount,
      charge: s.chargeId,
      paymentIntent: s.paymentIntentId,
      status,
      created,
    });
  return {
    withdrawn: stripeEvent("charge.dispute.funds_withdrawn", of("needs_response"), { created }),
    reinstated: stripeEvent("charge.dispute.funds_reinstated", of("won"), { created: created + 5 }),
  };
}

/** A sale of `amount` cents to `account` for `credits` (as `ledger_credits`) and extra metadata. */
function saleTo(l: StripeLedger, account: string, credits: string, amount = 1000, extra = {}) {
  return sale({
    amount,
    created: l.nowSec(),
    metadata: { ledger_account: account, ledger_credits: credits, ...extra },
    clientReferenceId: account,
  });
}

/** The fields of a purchase that refunds and disputes move. */
const standing = (p: Purchase) => ({
  amountRefunded: p.amountRefunded,
  creditsClawedBack: p.creditsClawedBack,
  creditsUncollected: p.creditsUncollected,
  status: p.status,
});

describe("a payment grants its credits exactly once", () => {
  it("from its session's, invoice's and PaymentIntent's events, each delivered 5 times at once", async () => {
    const l = await ledger();
    await l.subscribe();
    const accountId = await l.account("u1");
    const s = saleTo(l, "u1", "100");
    const { completed, invoicePaid, succeeded } = paymentEvents(s);
    const statuses = await l.deliverAll([completed, invoicePaid, succeeded], 5);
    expect(statuses.every(accepted), JSON.stringify(statuses)).toBe(true);

    const purchases = await l.purchases();
    expect(purchases).toHaveLength(1);
    const p = purchases[0] as Purchase;
    expect(p).toMatchObject({
      accountId,
      externalId: "u1",
      paymentIntentId: s.paymentIntentId,
      credits: 100,
      amountPaid: 1000,
      currency: "usd",
      amountRefunded: 0,
      creditsClawedBack: 0,
      creditsUncollected: 0,
      status: "paid",
      createdAt: new Date(l.t.now()).toISOString(),
    });
    expect(await l.balance("u1")).toEqual({ balance: 100, reserved: 0, available: 100 });
    const txns = await l.txns("u1");
    expect(txns.map((x) => [x.id, x.type, x.amount, x.balanceAfter])).toEqual([
      [p.transactionId, "credit", 100, 100],
    ]);
    const meta = txns[0]?.metadata as { reason: string; stripe: Record<string, unknown> };
    expect(meta.reason).toBe("purchase");
    expect(Object.keys(meta.stripe).sort()).toEqual([
      "amountPaid",
      "checkoutSessionId",
      "currency",
      "invoiceId",
      "paymentIntentId",
    ]);
    expect(meta.stripe).toMatchObject({
      paymentIntentId: s.paymentIntentId,
      amountPaid: 1000,
      currency: "usd",
    });
    expect([s.session.id, null]).toContain(meta.stripe.checkoutSessionId);
    expect([s.invoice.id, null]).toContain(meta.stripe.invoiceId);

    const listed = await l.stripeEvents();
    expect(listed.map((e) => e.id).sort()).toEqual(
      [completed.id, invoicePaid.id, succeeded.id].sort(),
    );
    expect(listed.map((e) => e.deliveries)).toEqual([5, 5, 5]);
    expect(listed.map((e) => e.outcome).sort()).toEqual(["applied", "duplicate", "duplicate"]);
    const applied = listed.find((e) => e.outcome === "applied");
    expect(applied).toMatchObject({ purchaseId: p.id, reason: null });
    for (const e of listed) {
      expect(e.type).toBe(
        { [completed.id]: completed.type, [invoicePaid.id]: invoicePaid.type }[e.id] ??
          succeeded.type,
      );
    }

    expect(await l.events("credits.purchased")).toEqual([
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: p.transactionId,
        credits: 100,
        balance: 100,
        restored: false,
      },
    ]);

    // A later redelivery is counted on its event and grants nothing.
    l.t.advance(60_000);
    expect(accepted((await l.deliver(completed)).status)).toBe(true);
    expect((await l.stripeEvent(completed.id))?.deliveries).toBe(6);
    expect(await l.purchases()).toHaveLength(1);
    expect((await l.balance("u1")).balance).toBe(100);
  });

  it("records the granting event's ids in the credit's metadata", async () => {
    const l = await ledger();
    await l.account("u1");
    const pi = stripeId("pi");
    const session = checkoutSession({
      paymentIntent: pi,
      amountTotal: 2500,
      clientReferenceId: "u1",
      metadata: { ledger_credits: "25.5" },
      created: l.nowSec(),
    });
    await l.deliverInTurn(stripeEvent("checkout.session.completed", session));
    const [credit] = await l.txns("u1");
    expect(credit?.metadata).toEqual({
      reason: "purchase",
      stripe: {
        paymentIntentId: pi,
        checkoutSessionId: session.id,
        invoiceId: null,
        amountPaid: 2500,
        currency: "usd",
      },
    });
    expect(await l.purchaseOf("u1")).toMatchObject({ credits: 25.5, amountPaid: 2500 });
  });
  it("of 10 payments to one account, and then their refunds, all at once, each grant and take back once", async () => {
    const l = await ledger();
    await l.account("u1");
    const sales = Array.from({ length: 10 }, (_, i) => saleTo(l, "u1", String(i + 1)));
    const grants = sales.flatMap((s) => [paymentEvents(s).completed, paymentEvents(s).succeeded]);
    expect((await l.deliverAll(grants, 2)).every(accepted)).toBe(true);
    expect(await l.purchases()).toHaveLength(10);
    expect((await l.balance("u1")).balance).toBe(55);
    l.t.advance(1000);
    const refunds = sales.map((s) => refunded(s, 500, l.nowSec()));
    expect((await l.deliverAll(refunds, 2)).every(accepted)).toBe(true);
    expect((await l.balance("u1")).balance).toBe(27.5);
    for (const p of await l.purchases()) {
      expect(standing(p), JSON.stringify(p)).toEqual({
        amountRefunded: 500,
        creditsClawedBack: p.credits / 2,
        creditsUncollected: 0,
        status: "partially_refunded",
      });
    }
  });
});

describe("only a succeeded payment that names the ledger grants", () => {
  it("an unpaid session grants nothing until its async_payment_succeeded", async () => {
    const l = await ledger();
    await l.account("u1");
    const pi = stripeId("pi");
    const fields = {
      paymentIntent: pi,
      amountTotal: 1000,
      clientReferenceId: "u1",
      metadata: { ledger_credits: "10" },
      created: l.nowSec(),
    };
    const unpaid = stripeEvent(
      "checkout.session.completed",
      checkoutSession({ ...fields, paymentStatus: "unpaid" }),
    );
    await l.deliverInTurn(unpaid);
    expect(await l.stripeEvent(unpaid.id)).toMatchObject({
      outcome: "ignored",
      purchaseId: null,
      deliveries: 1,
    });
    expect(await l.purchases()).toEqual([]);
    expect((await l.balance("u1")).balance).toBe(0);

    l.t.advance(3_600_000);
    const succeeded = stripeEvent(
      "checkout.session.async_payment_succeeded",
      checkoutSession({ ...fields, id: unpaid.data.object.id, paymentStatus: "paid" }),
    );
    await l.deliverInTurn(succeeded);
    const p = await l.purchaseOf("u1");
    expect(p).toMatchObject({ paymentIntentId: pi, credits: 10, status: "paid" });
    expect(await l.stripeEvent(succeeded.id)).toMatchObject({
      outcome: "applied",
      purchaseId: p.id,
      reason: null,
    });
    expect(await l.stripeEvent(unpaid.id)).toMatchObject({ outcome: "ignored" });
    expect((await l.balance("u1")).balance).toBe(10);
  });

  it("ignores what is not a succeeded payment, or does not name the ledger, each with its reason", async () => {
    const l = await ledger();
    await l.setPrice(100);
    await l.account("u1", { stripeCustomerId: "cus_u1" });
    const created = l.nowSec();
    const named = { ledger_account: "u1", ledger_credits: "10" };
    const session = (f: Partial<Parameters<typeof checkoutSession>[0]>) =>
      checkoutSession({
        paymentIntent: stripeId("pi"),
        amountTotal: 1000,
        clientReferenceId: "u1",
        metadata: named,
        created,
        ...f,
      });
    const ignored: StripeEvent[] = [
      stripeEvent(
        "checkout.session.completed",
        session({ paymentStatus: "no_payment_required", amountTotal: 0, paymentIntent: null }),
      ),
      stripeEvent(
        "checkout.session.completed",
        session({ mode: "subscription", paymentIntent: null }),
      ),
      stripeEvent("checkout.session.async_payment_failed", session({ paymentStatus: "unpaid" })),
      stripeEvent(
        "invoice.paid",
        invoice({ amountPaid: 0, paymentIntent: stripeId("pi"), metadata: named, created }),
        { apiVersion: LEGACY_API_VERSION },
      ),
      stripeEvent(
        "payment_intent.payment_failed",
        paymentIntent({
          amount: 1000,
          status: "requires_payment_method",
          metadata: named,
          created,
        }),
      ),
      // The customer is an account's, but nothing names the ledger.
      stripeEvent(
        "payment_intent.succeeded",
        paymentIntent({ amount: 1000, customer: "cus_u1", metadata: { order: "42" }, created }),
      ),
      stripeEvent(
        "checkout.session.completed",
        session({ clientReferenceId: null, customer: "cus_u1", metadata: {} }),
      ),
      stripeEvent("customer.created", { id: "cus_new", object: "customer", created }),
    ];
    for (const e of ignored) {
      const reply = await l.deliver(e);
      expect(accepted(reply.status), `${e.type}: ${reply.text}`).toBe(true);
    }
    const listed = await l.stripeEvents();
    expect(listed).toHaveLength(ignored.length);
    for (const e of listed) {
      expect(e, JSON.stringify(e)).toMatchObject({ outcome: "ignored", purchaseId: null });
      expect(e.reason?.length).toBeGreaterThan(0);
    }
    expect(await l.purchases()).toEqual([]);
    expect((await l.balance("u1")).balance).toBe(0);
  });
});

describe("the credits", () => {
  it("come from metadata.ledger_credits, else from the amount paid in USD times creditsPerUsd, rounded down", async () => {
    const l = await ledger();
    await l.account("u1");
    const created = l.nowSec();
    // ledger_credits needs no price, and wins over one.
    const a = saleTo(l, "u1", "12.5", 999);
    await l.deliverInTurn(paymentEvents(a).completed);
    await l.setPrice(100);
    const b = saleTo(l, "u1", "7", 100_000);
    await l.deliverInTurn(paymentEvents(b).succeeded);
    // A session's amount_total, an invoice's amount_paid, a PaymentIntent's amount_received.
    const c = checkoutSession({
      paymentIntent: stripeId("pi"),
      amountTotal: 1999,
      clientReferenceId: "u1",
      created,
    });
    const d = invoice({
      amountPaid: 250,
      paymentIntent: stripeId("pi"),
      metadata: { ledger_account: "u1" },
      created,
    });
    await l.deliverInTurn(
      stripeEvent("checkout.session.completed", c),
      stripeEvent("invoice.paid", d, { apiVersion: LEGACY_API_VERSION }),
    );
    await l.setPrice(0.333333);
    const e = paymentIntent({
      amount: 5000,
      amountReceived: 1001,
      metadata: { ledger_account: "u1" },
      created,
    });
    await l.deliverInTurn(stripeEvent("payment_intent.succeeded", e));
    const byIntent = new Map((await l.purchases()).map((p) => [p.paymentIntentId, p]));
    expect(
      [a.paymentIntentId, b.paymentIntentId, c.payment_intent, d.payment_intent, e.id].map((id) => {
        const p = byIntent.get(id as string);
        return [p?.credits, p?.amountPaid];
      }),
    ).toEqual([
      [12.5, 999],
      [7, 100_000],
      [1999, 1999],
      [250, 250],
      // 10.01 USD × 0.333333 = 3.33666333, rounded down to the micro-credit.
      [3.336663, 1001],
    ]);
    expect((await l.balance("u1")).balance).toBe(2271.836663);
  });

  it("are not granted in another currency without ledger_credits, nor without a credit price", async () => {
    const l = await ledger();
    await l.account("u1");
    const created = l.nowSec();
    const eur = (metadata: Metadata) =>
      stripeEvent(
        "payment_intent.succeeded",
        paymentIntent({ amount: 1000, currency: "eur", metadata, created }),
      );
    const noPrice = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent({ amount: 1000, metadata: { ledger_account: "u1" }, created }),
    );
    const eurNoCredits = eur({ ledger_account: "u1" });
    await l.deliverInTurn(noPrice);
    await l.setPrice(100);
    await l.deliverInTurn(eurNoCredits);
    const eurCredits = eur({ ledger_account: "u1", ledger_credits: "7" });
    await l.deliverInTurn(eurCredits);
    for (const id of [noPrice.id, eurNoCredits.id]) {
      expect(await l.stripeEvent(id)).toMatchObject({ outcome: "ignored", purchaseId: null });
    }
    expect(await l.purchaseOf("u1")).toMatchObject({
      paymentIntentId: eurCredits.data.object.id,
      credits: 7,
      amountPaid: 1000,
      currency: "eur",
    });
    expect((await l.balance("u1")).balance).toBe(7);
  });

  it("make the event ignored when invalid, naming the ledger_ key, or balance_limit past 1e9 or 9e9", async () => {
    const l = await ledger();
    await l.account("u1");
    const created = l.nowSec();
    const pay = (metadata: Metadata, amount = 1000) =>
      stripeEvent(
        "payment_intent.succeeded",
        paymentIntent({ amount, metadata: { ledger_account: "u1", ...metadata }, created }),
      );
    const cases: [StripeEvent, string][] = [
      ...["abc", "0", "0.0", "-5", "1.1234567", "1e3", " 5", "1000000001"].map(
        (v): [StripeEvent, string] => [pay({ ledger_credits: v }), "ledger_credits"],
      ),
      ...["101", "-1", "abc", "1.5"].map((v): [StripeEvent, string] => [
        pay({ ledger_credits: "1", ledger_priority: v }),
        "ledger_priority",
      ]),
      ...["0", "3654", "1.5", "x"].map((v): [StripeEvent, string] => [
        pay({ ledger_credits: "1", ledger_expires_in_days: v }),
        "ledger_expires_in_days",
      ]),
    ];
    await l.setPrice(1_000_000_000);
    // 2 USD at 1e9 credits per USD: 2e9 credits.
    cases.push([pay({}, 200), "balance_limit"]);
    for (const [event] of cases) await l.deliverInTurn(event);
    for (const [event, named] of cases) {
      const listed = await l.stripeEvent(event.id);
      expect(listed, JSON.stringify(event.data.object.metadata)).toMatchObject({
        outcome: "ignored",
        purchaseId: null,
      });
      expect(listed?.reason, JSON.stringify(event.data.object.metadata)).toContain(named);
    }
    expect(await l.purchases()).toEqual([]);

    // A balance may not pass 9e9.
    for (let i = 0; i < 9; i++) {
      const reply = await l.post("/v1/accounts/credits/add", { accountId: "u1", amount: 1e9 });
      expect(reply.status, reply.text).toBe(200);
    }
    const over = pay({ ledger_credits: "0.000001" });
    await l.deliverInTurn(over);
    expect((await l.stripeEvent(over.id))?.reason).toContain("balance_limit");
    expect((await l.balance("u1")).balance).toBe(9e9);
    expect(await l.purchases()).toEqual([]);
  });

  it("take their priority and expiry from metadata, counted from the Stripe object's created", async () => {
    const l = await ledger();
    await l.subscribe();
    await l.account("u1");
    const created = l.nowSec() - 86_400;
    const event = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent({
        amount: 1000,
        created,
        metadata: {
          ledger_account: "u1",
          ledger_credits: "10",
          ledger_priority: "70",
          ledger_expires_in_days: "30",
        },
      }),
    );
    await l.deliverInTurn(event);
    expect(await l.grants("u1")).toMatchObject([
      {
        amount: 10,
        remaining: 10,
        priority: 70,
        expiresAt: new Date((created + 30 * 86_400) * 1000).toISOString(),
        status: "active",
      },
    ]);
    // Without them: priority 50, no expiry.
    await l.account("u2");
    await l.deliverInTurn(paymentEvents(saleTo(l, "u2", "5")).succeeded);
    expect(await l.grants("u2")).toMatchObject([{ priority: 50, expiresAt: null }]);
  });

  it("already expired when booked are granted and expired at once", async () => {
    const l = await ledger();
    await l.subscribe();
    const accountId = await l.account("u1");
    const created = l.nowSec() - 40 * 86_400;
    const event = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent({
        amount: 1000,
        created,
        metadata: { ledger_account: "u1", ledger_credits: "10", ledger_expires_in_days: "30" },
      }),
    );
    await l.deliverInTurn(event);
    const p = await l.purchaseOf("u1");
    expect(p).toMatchObject({ credits: 10, status: "paid" });
    expect(await l.stripeEvent(event.id)).toMatchObject({ outcome: "applied", purchaseId: p.id });
    expect(await l.balance("u1")).toEqual({ balance: 0, reserved: 0, available: 0 });
    expect((await l.txns("u1")).map((x) => [x.type, x.amount, x.balanceAfter])).toEqual([
      ["credit", 10, 10],
      ["debit", 10, 0],
    ]);
    expect(await l.grants("u1")).toMatchObject([{ amount: 10, status: "expired" }]);
    expect(await l.events("credits.expired")).toHaveLength(1);
    expect((await l.events("credits.purchased"))[0]).toMatchObject({ accountId, credits: 10 });
  });
});

describe("the account", () => {
  it("is the session's client_reference_id, else metadata.ledger_account, else the customer's, by id or externalId", async () => {
    const l = await ledger();
    const ids = new Map<string, string>();
    for (const name of ["a", "b", "c", "d", "e"]) {
      ids.set(name, await l.account(name, { stripeCustomerId: `cus_${name}` }));
    }
    const created = l.nowSec();
    const cases: [StripeEvent, string][] = [
      // client_reference_id (an id, an externalId) before metadata and customer.
      [
        stripeEvent(
          "checkout.session.completed",
          checkoutSession({
            paymentIntent: stripeId("pi"),
            amountTotal: 100,
            clientReferenceId: ids.get("a") as string,
            customer: "cus_c",
            metadata: { ledger_account: "b", ledger_credits: "1" },
            created,
          }),
        ),
        "a",
      ],
      [
        stripeEvent(
          "checkout.session.completed",
          checkoutSession({
            paymentIntent: stripeId("pi"),
            amountTotal: 100,
            clientReferenceId: "b",
            customer: "cus_c",
            metadata: { ledger_credits: "1" },
            created,
          }),
        ),
        "b",
      ],
      // metadata.ledger_account before the customer.
      [
        stripeEvent(
          "payment_intent.succeeded",
          paymentIntent({
            amount: 100,
            customer: "cus_a",
            metadata: { ledger_account: ids.get("c") as string, ledger_credits: "1" },
            created,
          }),
        ),
        "c",
      ],
      [
        stripeEvent(
          "invoice.paid",
          invoice({
            amountPaid: 100,
            paymentIntent: stripeId("pi"),
            customer: "cus_a",
            metadata: { ledger_account: "d", ledger_credits: "1" },
            created,
          }),
          { apiVersion: LEGACY_API_VERSION },
        ),
        "d",
      ],
      // The account whose stripeCustomerId is the object's customer.
      [
        stripeEvent(
          "payment_intent.succeeded",
          paymentIntent({
            amount: 100,
            customer: "cus_e",
            metadata: { ledger_credits: "1" },
            created,
          }),
        ),
        "e",
      ],
    ];
    for (const [event] of cases) await l.deliverInTurn(event);
    for (const [event, owner] of cases) {
      const listed = await l.stripeEvent(event.id);
      expect(listed?.outcome, event.type).toBe("applied");
      const p = (await l.purchases()).find((x) => x.id === listed?.purchaseId);
      expect(p, owner).toMatchObject({ accountId: ids.get(owner), externalId: owner, credits: 1 });
    }
    for (const name of ["a", "b", "c", "d", "e"]) expect((await l.balance(name)).balance).toBe(1);
    expect(await l.purchases(`accountId=${ids.get("a")}`)).toHaveLength(1);
    expect(await l.purchases("externalId=b")).toHaveLength(1);
  });

  it("that names no account of the project makes the event ignored", async () => {
    const l = await ledger();
    await l.account("u1");
    const other = await l.t.newProject("other");
    const reply = await sendJson(l.send, other.key, "POST", "/v1/accounts/create", {
      body: { externalId: "theirs", stripeCustomerId: "cus_theirs" },
    });
    expect(reply.status, reply.text).toBe(200);
    const theirId = (reply.body as { account: { id: string } }).account.id;
    const created = l.nowSec();
    const events = [
      stripeEvent(
        "checkout.session.completed",
        checkoutSession({
          paymentIntent: stripeId("pi"),
          amountTotal: 100,
          clientReferenceId: "nobody",
          metadata: { ledger_credits: "1" },
          created,
        }),
      ),
      ...([{ ledger_account: "theirs" }, { ledger_account: theirId }, {}] as Metadata[]).map((m) =>
        stripeEvent(
          "payment_intent.succeeded",
          paymentIntent({
            amount: 100,
            customer: "cus_theirs",
            metadata: { ...m, ledger_credits: "1" },
            created,
          }),
        ),
      ),
    ];
    // The first present names no account: the next ones are not tried.
    await l.account("u2", { stripeCustomerId: "cus_u2" });
    events.push(
      stripeEvent(
        "checkout.session.completed",
        checkoutSession({
          paymentIntent: stripeId("pi"),
          amountTotal: 100,
          clientReferenceId: "nobody",
          customer: "cus_u2",
          metadata: { ledger_account: "u1", ledger_credits: "1" },
          created,
        }),
      ),
      stripeEvent(
        "payment_intent.succeeded",
        paymentIntent({
          amount: 100,
          customer: "cus_u2",
          metadata: { ledger_account: "nobody", ledger_credits: "1" },
          created,
        }),
      ),
    );
    for (const e of events) await l.deliverInTurn(e);
    for (const e of events) {
      expect(await l.stripeEvent(e.id), e.id).toMatchObject({
        outcome: "ignored",
        purchaseId: null,
      });
    }
    expect(await l.purchases()).toEqual([]);
    const theirs = await sendJson(
      l.send,
      other.key,
      "GET",
      "/v1/accounts/balance?accountId=theirs",
    );
    expect((theirs.body as { balance: number }).balance).toBe(0);
  });

  it("funded by its parent gets the credits on its pool, on its behalf", async () => {
    const l = await ledger();
    const poolId = await l.account("pool");
    const memberId = await l.account("member", { parentId: "pool" });
    const s = saleTo(l, "member", "10");
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("member");
    expect(p).toMatchObject({ accountId: memberId, externalId: "member", credits: 10 });
    const [credit] = await l.txns("pool");
    expect(credit).toMatchObject({
      id: p.transactionId,
      accountId: poolId,
      type: "credit",
      amount: 10,
      onBehalfOf: memberId,
    });
    expect((await l.balance("pool")).balance).toBe(10);
  });

  it("names its Stripe customer, unique in the project (409 DUPLICATE_STRIPE_CUSTOMER)", async () => {
    const l = await ledger();
    const created = await l.post("/v1/accounts/create", { externalId: "u1" });
    expect((created.body as { account: Record<string, unknown> }).account.stripeCustomerId).toBe(
      null,
    );
    await l.account("u2", { stripeCustomerId: "cus_2" });
    const update = await l.post("/v1/accounts/update", {
      accountId: "u1",
      stripeCustomerId: "cus_1",
    });
    expect(update.status, update.text).toBe(200);
    expect((update.body as { account: Record<string, unknown> }).account.stripeCustomerId).toBe(
      "cus_1",
    );
    // GET /v1/accounts/get answers the Account object itself.
    const got = await l.get("/v1/accounts/get?accountId=u1");
    expect((got.body as Record<string, unknown>).stripeCustomerId).toBe("cus_1");
    expectError(
      await l.post("/v1/accounts/create", { externalId: "u3", stripeCustomerId: "cus_1" }),
      409,
      "DUPLICATE_STRIPE_CUSTOMER",
    );
    expectError(
      await l.post("/v1/accounts/update", { accountId: "u2", stripeCustomerId: "cus_1" }),
      409,
      "DUPLICATE_STRIPE_CUSTOMER",
    );
    // null unsets it, and frees it for another account.
    const unset = await l.post("/v1/accounts/update", { accountId: "u1", stripeCustomerId: null });
    expect((unset.body as { account: Record<string, unknown> }).account.stripeCustomerId).toBe(
      null,
    );
    const taken = await l.post("/v1/accounts/update", {
      accountId: "u2",
      stripeCustomerId: "cus_1",
    });
    expect(taken.status, taken.text).toBe(200);
    // Another project may name the same customer.
    const other = await l.t.newProject("other");
    const theirs = await sendJson(l.send, other.key, "POST", "/v1/accounts/create", {
      body: { externalId: "u1", stripeCustomerId: "cus_1" },
    });
    expect(theirs.status, theirs.text).toBe(200);
  });
});

describe("refunds take the credits back", () => {
  it("30% then 100% of the payment take back 30% then the other 70% of the credits", async () => {
    const l = await ledger();
    await l.subscribe();
    const accountId = await l.account("u1");
    const s = saleTo(l, "u1", "100");
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");

    l.t.advance(60_000);
    const first = refunded(s, 300, l.nowSec());
    await l.deliverInTurn(first);
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 300,
      creditsClawedBack: 30,
      creditsUncollected: 0,
      status: "partially_refunded",
    });
    expect(await l.balance("u1")).toEqual({ balance: 70, reserved: 0, available: 70 });
    expect(await l.stripeEvent(first.id)).toMatchObject({ outcome: "applied", purchaseId: p.id });

    l.t.advance(60_000);
    await l.deliverInTurn(refunded(s, 1000, l.nowSec()));
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 1000,
      creditsClawedBack: 100,
      creditsUncollected: 0,
      status: "refunded",
    });
    expect(await l.balance("u1")).toEqual({ balance: 0, reserved: 0, available: 0 });

    const txns = await l.txns("u1");
    expect(txns.map((x) => [x.type, x.amount, x.balanceAfter, x.reversalOf])).toEqual([
      ["credit", 100, 100, null],
      ["debit", 30, 70, p.transactionId],
      ["debit", 70, 0, p.transactionId],
    ]);
    const clawed = await l.events("credits.clawed_back");
    expect(clawed).toEqual([
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: txns[1]?.id,
        credits: 30,
        creditsUncollected: 0,
        balance: 70,
      },
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: txns[2]?.id,
        credits: 70,
        creditsUncollected: 0,
        balance: 0,
      },
    ]);
    expect((await l.events("transaction.reversed")).map((e) => e.transactionId)).toEqual([
      txns[1]?.id,
      txns[2]?.id,
    ]);
    expect(await l.events("purchase.clawback_incomplete")).toEqual([]);

    // The older refund again changes nothing.
    await l.deliverInTurn(first);
    expect((await l.purchaseOf("u1")).status).toBe("refunded");
    expect((await l.balance("u1")).balance).toBe(0);
  });

  it("records what is already spent or held as uncollected and never goes below zero", async () => {
    const l = await ledger();
    await l.subscribe();
    const accountId = await l.account("u1");
    const s = saleTo(l, "u1", "100");
    await l.deliverInTurn(paymentEvents(s).succeeded);
    const p = await l.purchaseOf("u1");
    expect(
      (await l.post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 70 })).status,
    ).toBe(200);
    const hold = await l.post("/v1/reservations/create", { accountId: "u1", amount: 10 });
    expect(hold.status, hold.text).toBe(200);
    expect(await l.balance("u1")).toEqual({ balance: 30, reserved: 10, available: 20 });

    // 30%: 30 to take back, 20 available.
    l.t.advance(1000);
    await l.deliverInTurn(refunded(s, 300, l.nowSec()));
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 300,
      creditsClawedBack: 20,
      creditsUncollected: 10,
      status: "partially_refunded",
    });
    expect(await l.balance("u1")).toEqual({ balance: 10, reserved: 10, available: 0 });

    // 100%: 70 more to take back, nothing available.
    l.t.advance(1000);
    await l.deliverInTurn(refunded(s, 1000, l.nowSec()));
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 1000,
      creditsClawedBack: 20,
      creditsUncollected: 80,
      status: "refunded",
    });
    expect(await l.balance("u1")).toEqual({ balance: 10, reserved: 10, available: 0 });

    const reversals = (await l.txns("u1")).filter((x) => x.reversalOf === p.transactionId);
    expect(reversals.map((x) => [x.type, x.amount])).toEqual([["debit", 20]]);
    expect(await l.events("credits.clawed_back")).toEqual([
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: reversals[0]?.id,
        credits: 20,
        creditsUncollected: 10,
        balance: 10,
      },
    ]);
    expect(await l.events("transaction.reversed")).toHaveLength(1);
    expect(await l.events("purchase.clawback_incomplete")).toEqual([
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        creditsUncollected: 10,
        creditsUncollectedTotal: 10,
      },
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        creditsUncollected: 70,
        creditsUncollectedTotal: 80,
      },
    ]);
  });

  it("takes back to the micro-credit: floor(refunded ÷ paid × credits)", async () => {
    const l = await ledger();
    await l.account("u1");
    const s = saleTo(l, "u1", "10", 3);
    await l.deliverInTurn(paymentEvents(s).completed);
    const seen: [number, number, number][] = [];
    for (const cents of [1, 2, 3]) {
      l.t.advance(1000);
      await l.deliverInTurn(refunded(s, cents, l.nowSec()));
      const p = await l.purchaseOf("u1");
      seen.push([p.amountRefunded, p.creditsClawedBack, (await l.balance("u1")).balance]);
    }
    expect(seen).toEqual([
      [1, 3.333333, 6.666667],
      [2, 6.666666, 3.333334],
      [3, 10, 0],
    ]);
  });

  it("of a member's purchase come off its pool", async () => {
    const l = await ledger();
    const poolId = await l.account("pool");
    const memberId = await l.account("member", { parentId: "pool" });
    const s = saleTo(l, "member", "10");
    await l.deliverInTurn(paymentEvents(s).completed);
    l.t.advance(1000);
    await l.deliverInTurn(refunded(s, 1000, l.nowSec()));
    expect(await l.purchaseOf("member")).toMatchObject({
      accountId: memberId,
      creditsClawedBack: 10,
      creditsUncollected: 0,
      status: "refunded",
    });
    expect((await l.balance("pool")).balance).toBe(0);
    const [credit, reversal] = await l.txns("pool");
    expect(reversal).toMatchObject({
      accountId: poolId,
      type: "debit",
      amount: 10,
      reversalOf: credit?.id,
      onBehalfOf: memberId,
    });
  });

  it("delivered 5 times each at once with a dispute take back exactly the target", async () => {
    const l = await ledger();
    await l.subscribe();
    await l.account("u1");
    const s = saleTo(l, "u1", "100");
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");
    const created = l.nowSec();
    const d = disputeEvents(s, 200, created + 20);
    const statuses = await l.deliverAll([refunded(s, 300, created + 10), d.withdrawn], 5);
    expect(statuses.every(accepted), JSON.stringify(statuses)).toBe(true);
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 300,
      creditsClawedBack: 50,
      creditsUncollected: 0,
      status: "disputed",
    });
    expect((await l.balance("u1")).balance).toBe(50);
    const reversals = (await l.txns("u1")).filter((x) => x.reversalOf === p.transactionId);
    expect(reversals.reduce((sum, x) => sum + x.amount, 0)).toBe(50);
    const clawed = await l.events("credits.clawed_back");
    expect(clawed.map((e) => e.transactionId)).toEqual(reversals.map((x) => x.id));
    // The session's event once, the refund's and the dispute's 5 times each.
    expect((await l.stripeEvents()).map((e) => e.deliveries).sort()).toEqual([1, 5, 5]);
  });

  it("counts reversals of the purchase's credit made by hand as taken back", async () => {
    const l = await ledger();
    await l.account("u1");
    const s = saleTo(l, "u1", "100");
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");
    const byHand = await l.post("/v1/transactions/reverse", {
      transactionId: p.transactionId,
      amount: 40,
    });
    expect(byHand.status, byHand.text).toBe(200);
    await l.deliverInTurn(refunded(s, 1000));
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 1000,
      creditsClawedBack: 100,
      creditsUncollected: 0,
      status: "refunded",
    });
    expect(await l.balance("u1")).toEqual({ balance: 0, reserved: 0, available: 0 });
    const reversals = (await l.txns("u1")).filter((x) => x.reversalOf === p.transactionId);
    expect(reversals.map((x) => x.amount)).toEqual([40, 60]);
  });

  it("charge.refund.updated recounts the refunds seen, a failed or canceled one not counted", async () => {
    const l = await ledger();
    await l.subscribe();
    await l.account("u1");
    const s = saleTo(l, "u1", "100", 1000, { ledger_priority: "20" });
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");
    const created = l.nowSec();
    let at = created;
    /** charge.refund.updated of Refund `id`, each event a second after the one before. */
    const update = (id: string, amount: number, status: Parameters<typeof refund>[0]["status"]) =>
      stripeEvent(
        "charge.refund.updated",
        refund({
          id,
          amount,
          charge: s.chargeId,
          paymentIntent: s.paymentIntentId,
          status,
          created,
        }),
        { created: ++at },
      );
    const [re1, re2, re3] = [stripeId("re"), stripeId("re"), stripeId("re")];
    await l.deliverInTurn(update(re1, 300, "succeeded"), update(re3, 100, "canceled"));
    expect(standing(await l.purchaseOf("u1"))).toMatchObject({
      amountRefunded: 300,
      creditsClawedBack: 30,
      status: "partially_refunded",
    });
    await l.deliverInTurn(update(re2, 200, "succeeded"));
    expect(standing(await l.purchaseOf("u1"))).toMatchObject({
      amountRefunded: 500,
      creditsClawedBack: 50,
    });
    expect((await l.balance("u1")).balance).toBe(50);
    // The second refund fails: its credits come back as a restore.
    await l.deliverInTurn(update(re2, 200, "failed"));
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 300,
      creditsClawedBack: 30,
      creditsUncollected: 0,
      status: "partially_refunded",
    });
    expect((await l.balance("u1")).balance).toBe(70);
    const restores = (await l.txns("u1")).filter(
      (x) => (x.metadata as { reason?: string } | null)?.reason === "purchase_restored",
    );
    expect(restores.map((x) => [x.type, x.amount, x.reversalOf])).toEqual([["credit", 20, null]]);
    const restoreGrant = (await l.grants("u1")).find((g) => g.transactionId === restores[0]?.id);
    expect(restoreGrant).toMatchObject({ amount: 20, priority: 20, expiresAt: null });
    expect((await l.events("credits.purchased")).at(-1)).toMatchObject({
      purchaseId: p.id,
      transactionId: restores[0]?.id,
      credits: 20,
      balance: 70,
      restored: true,
    });
  });
});

describe("disputes", () => {
  it("funds withdrawn take the credits back; reinstated, they come back as a restore", async () => {
    const l = await ledger();
    await l.subscribe();
    const accountId = await l.account("u1");
    const s = saleTo(l, "u1", "100", 1000, {
      ledger_priority: "70",
      ledger_expires_in_days: "30",
    });
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");
    const [original] = await l.grants("u1");
    const d = disputeEvents(s, 1000, l.nowSec() + 10);
    l.t.advance(10_000);
    await l.deliverInTurn(d.withdrawn);
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 0,
      creditsClawedBack: 100,
      creditsUncollected: 0,
      status: "disputed",
    });
    expect((await l.balance("u1")).balance).toBe(0);

    l.t.advance(10_000);
    await l.deliverInTurn(d.reinstated);
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 0,
      creditsClawedBack: 0,
      creditsUncollected: 0,
      status: "paid",
    });
    expect(await l.balance("u1")).toEqual({ balance: 100, reserved: 0, available: 100 });
    const txns = await l.txns("u1");
    expect(txns.map((x) => [x.type, x.amount, x.balanceAfter, x.reversalOf])).toEqual([
      ["credit", 100, 100, null],
      ["debit", 100, 0, p.transactionId],
      ["credit", 100, 100, null],
    ]);
    const restore = txns[2];
    expect(restore?.metadata).toMatchObject({ reason: "purchase_restored" });
    const grant = (await l.grants("u1")).find((g) => g.transactionId === restore?.id);
    expect(grant).toMatchObject({
      amount: 100,
      remaining: 100,
      priority: 70,
      expiresAt: original?.expiresAt,
      status: "active",
    });
    expect(original?.expiresAt).not.toBe(null);
    expect(await l.events("credits.purchased")).toEqual([
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: p.transactionId,
        credits: 100,
        balance: 100,
        restored: false,
      },
      {
        accountId,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: restore?.id,
        credits: 100,
        balance: 100,
        restored: true,
      },
    ]);
    for (const e of [d.withdrawn, d.reinstated]) {
      expect(await l.stripeEvent(e.id)).toMatchObject({ outcome: "applied", purchaseId: p.id });
    }
  });

  it("reinstated funds first cancel what was uncollected, then restore the rest", async () => {
    const l = await ledger();
    await l.subscribe();
    await l.account("u1");
    const s = saleTo(l, "u1", "100");
    await l.deliverInTurn(paymentEvents(s).succeeded);
    const p = await l.purchaseOf("u1");
    expect(
      (await l.post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 80 })).status,
    ).toBe(200);
    const d = disputeEvents(s, 1000, l.nowSec());
    await l.deliverInTurn(d.withdrawn);
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 0,
      creditsClawedBack: 20,
      creditsUncollected: 80,
      status: "disputed",
    });
    expect((await l.balance("u1")).balance).toBe(0);
    await l.deliverInTurn(d.reinstated);
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 0,
      creditsClawedBack: 0,
      creditsUncollected: 0,
      status: "paid",
    });
    expect((await l.balance("u1")).balance).toBe(20);
    expect((await l.events("credits.purchased")).at(-1)).toMatchObject({
      purchaseId: p.id,
      credits: 20,
      balance: 20,
      restored: true,
    });
  });
  it("a later rise takes back the purchase's credit first, then its restores, newest first", async () => {
    const l = await ledger();
    await l.account("u1");
    const s = saleTo(l, "u1", "100");
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");
    let at = l.nowSec();
    const d = disputeEvents(s, 1000, ++at);
    at += 10;
    await l.deliverInTurn(d.withdrawn, d.reinstated);
    const update = (id: string, amount: number, status: "succeeded" | "failed") =>
      stripeEvent(
        "charge.refund.updated",
        refund({
          id,
          amount,
          charge: s.chargeId,
          paymentIntent: s.paymentIntentId,
          status,
          created: at,
        }),
        { created: ++at },
      );
    const [re1, re2] = [stripeId("re"), stripeId("re")];
    // The credit is all reversed (the dispute); the restore R1 of 100 gives 30 to re1, which
    // then fails: R2 gives those 30 back. A full refund then takes R2's 30, then R1's 70.
    await l.deliverInTurn(update(re1, 300, "succeeded"), update(re1, 300, "failed"));
    await l.deliverInTurn(update(re2, 1000, "succeeded"));
    expect(standing(await l.purchaseOf("u1"))).toEqual({
      amountRefunded: 1000,
      creditsClawedBack: 100,
      creditsUncollected: 0,
      status: "refunded",
    });
    expect((await l.balance("u1")).balance).toBe(0);
    const txns = await l.txns("u1");
    const restores = txns.filter(
      (x) => (x.metadata as { reason?: string } | null)?.reason === "purchase_restored",
    );
    expect(restores.map((x) => x.amount)).toEqual([100, 30]);
    const [r1, r2] = restores;
    const name = new Map<string | null | undefined, string>([
      [p.transactionId, "credit"],
      [r1?.id, "R1"],
      [r2?.id, "R2"],
    ]);
    expect(
      txns.filter((x) => x.reversalOf !== null).map((x) => [name.get(x.reversalOf), x.amount]),
    ).toEqual([
      ["credit", 100],
      ["R1", 30],
      ["R2", 30],
      ["R1", 70],
    ]);
  });
});

describe("order does not matter", () => {
  it("a refund delivered before its payment is pending, then applied with the grant", async () => {
    const l = await ledger();
    await l.account("u1");
    const s = saleTo(l, "u1", "100");
    const early = refunded(s, 300);
    await l.deliverInTurn(early);
    expect(await l.stripeEvent(early.id)).toMatchObject({ outcome: "pending", purchaseId: null });
    expect(await l.purchases()).toEqual([]);
    l.t.advance(1000);
    await l.deliverInTurn(paymentEvents(s).completed);
    const p = await l.purchaseOf("u1");
    expect(standing(p)).toEqual({
      amountRefunded: 300,
      creditsClawedBack: 30,
      creditsUncollected: 0,
      status: "partially_refunded",
    });
    expect(p.credits).toBe(100);
    expect((await l.balance("u1")).balance).toBe(70);
    expect(await l.stripeEvent(early.id)).toMatchObject({ outcome: "applied", purchaseId: p.id });
  });

  it("a pending refund's redeliveries racing its grant take turns on the payment: no deadlock", async () => {
    // Each delivery of the refund locks its own event row; the grant, under the payment's lock,
    // marks the payment's pending events applied. Were the event row locked before the
    // payment's, a redelivery and the grant would each wait on the other (PostgreSQL detects it
    // after a second and retries). Counted from PostgreSQL's statistics, once the ledger's
    // sessions have ended and so flushed them.
    const l = await ledger();
    await l.account("u1");
    const s = saleTo(l, "u1", "100");
    const early = refunded(s, 300);
    await l.deliverInTurn(early);
    const { completed, succeeded, invoicePaid } = paymentEvents(s);
    const statuses = await l.deliverAll(
      [early, completed, early, succeeded, early, invoicePaid],
      4,
    );
    expect(statuses.every(accepted), JSON.stringify(statuses)).toBe(true);
    expect((await l.balance("u1")).balance).toBe(70);
    if (TEST_ENGINE === "postgres") expect(await deadlocksOf(l.t.databaseUrl)).toBe(0);
  });

  it("a refund of a payment that was ignored is ignored", async () => {
    const l = await ledger();
    await l.account("u1", { stripeCustomerId: "cus_1" });
    const s = sale({ amount: 1000, created: l.nowSec(), customer: "cus_1" });
    await l.deliverInTurn(paymentEvents(s).succeeded);
    const late = refunded(s, 1000);
    await l.deliverInTurn(late);
    expect(await l.stripeEvent(late.id)).toMatchObject({ outcome: "ignored", purchaseId: null });
    expect(await l.purchases()).toEqual([]);
  });

  it("the same events in any order and any number of times leave the same balance and purchase", async () => {
    const l = await ledger();
    const created = l.nowSec();
    /** The events of one payment: a 30% then 60% refund, and a dispute of 20% lost then won. */
    const story = (account: string) => {
      const s = saleTo(l, account, "100");
      const { completed, succeeded, invoicePaid } = paymentEvents(s);
      const d = disputeEvents(s, 200, created + 30);
      return [
        completed,
        succeeded,
        invoicePaid,
        refunded(s, 300, created + 10),
        refunded(s, 600, created + 20),
        d.withdrawn,
        d.reinstated,
      ];
    };
    /** A deterministic shuffle. */
    const shuffled = <T>(items: T[], seed: number) => {
      const out = [...items];
      let x = seed;
      for (let i = out.length - 1; i > 0; i--) {
        x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
        const j = x % (i + 1);
        [out[i], out[j]] = [out[j] as T, out[i] as T];
      }
      return out;
    };
    const orders: [string, (events: StripeEvent[]) => Promise<void>][] = [
      ["in turn", (e) => l.deliverInTurn(...e)],
      ["reversed", (e) => l.deliverInTurn(...[...e].reverse())],
      ["shuffled, twice each", (e) => l.deliverInTurn(...shuffled([...e, ...e], 7))],
      ["shuffled again", (e) => l.deliverInTurn(...shuffled(e, 99))],
      [
        "all at once, 3 times each",
        async (e) => {
          const statuses = await l.deliverAll(e, 3);
          expect(statuses.every(accepted), JSON.stringify(statuses)).toBe(true);
        },
      ],
    ];
    for (const [name, deliver] of orders) {
      const account = `u-${name.replaceAll(/[^a-z0-9]+/g, "-")}`;
      await l.account(account);
      await deliver(story(account));
      expect(await l.balance(account), name).toEqual({ balance: 40, reserved: 0, available: 40 });
      const p = await l.purchaseOf(account);
      expect({ ...standing(p), credits: p.credits }, name).toEqual({
        amountRefunded: 600,
        creditsClawedBack: 60,
        creditsUncollected: 0,
        status: "partially_refunded",
        credits: 100,
      });
    }
    const listed = await l.stripeEvents("limit=100");
    expect(listed).toHaveLength(7 * orders.length);
    expect(listed.filter((e) => e.outcome === "pending")).toEqual([]);
  });
  it("a Checkout payment whose PaymentIntent does not name the ledger ends the same in any order", async () => {
    const l = await ledger();
    const created = l.nowSec();
    /** Checkout names the ledger on its session only, as Stripe does not copy metadata over. */
    const story = (account: string) => {
      const s = sale({
        amount: 1000,
        created,
        clientReferenceId: account,
        metadata: {},
      });
      const session = { ...s.session, metadata: { ledger_credits: "100" } };
      return [
        stripeEvent("payment_intent.succeeded", s.intent),
        refunded(s, 300, created + 10),
        stripeEvent("checkout.session.completed", session),
      ];
    };
    const orders: [string, (events: StripeEvent[]) => Promise<void>][] = [
      ["in turn", (e) => l.deliverInTurn(...e)],
      ["reversed", (e) => l.deliverInTurn(...[...e].reverse())],
      [
        "all at once, 3 times each",
        async (e) => {
          const statuses = await l.deliverAll(e, 3);
          expect(statuses.every(accepted), JSON.stringify(statuses)).toBe(true);
        },
      ],
    ];
    for (const [name, deliver] of orders) {
      const account = `c-${name.replaceAll(/[^a-z0-9]+/g, "-")}`;
      await l.account(account);
      await deliver(story(account));
      expect(await l.balance(account), name).toEqual({ balance: 70, reserved: 0, available: 70 });
      expect(standing(await l.purchaseOf(account)), name).toEqual({
        amountRefunded: 300,
        creditsClawedBack: 30,
        creditsUncollected: 0,
        status: "partially_refunded",
      });
    }
  });
});

describe("an invoice without payment_intent", () => {
  /** An invoice of today's API versions, and the InvoicePayment that names its PaymentIntent. */
  const newInvoice = (l: StripeLedger, metadata: Metadata, subscriptionMetadata?: Metadata) => {
    const pi = stripeId("pi");
    const inv = invoice({
      amountPaid: 1000,
      metadata,
      created: l.nowSec(),
      ...(subscriptionMetadata ? { subscriptionMetadata } : {}),
    });
    l.fake.invoices.set(inv.id, inv);
    l.fake.invoicePayments.set(inv.id, [invoicePayment(inv.id, pi, 1000)]);
    return {
      pi,
      inv,
      event: stripeEvent("invoice.paid", inv, { apiVersion: CURRENT_API_VERSION }),
    };
  };

  it("is resolved through its payments with the secret key, keyed by that PaymentIntent", async () => {
    const l = await ledger({ secretKey: true });
    await l.account("u1");
    const { pi, inv, event } = newInvoice(l, { ledger_account: "u1", ledger_credits: "10" });
    expect(inv).not.toHaveProperty("payment_intent");
    await l.deliverInTurn(event);
    const p = await l.purchaseOf("u1");
    expect(p).toMatchObject({ paymentIntentId: pi, credits: 10, amountPaid: 1000 });
    expect(await l.stripeEvent(event.id)).toMatchObject({ outcome: "applied", purchaseId: p.id });
    const [credit] = await l.txns("u1");
    expect(credit?.metadata?.stripe).toMatchObject({
      paymentIntentId: pi,
      invoiceId: inv.id,
      checkoutSessionId: null,
    });
    // It read the invoice's payments from Stripe, with the key, and wrote nothing there.
    const reads = l.fake.requests.filter(
      (r) =>
        (r.path === "/v1/invoice_payments" && r.query.invoice === inv.id) ||
        (r.path === `/v1/invoices/${inv.id}` &&
          JSON.stringify(r.query.expand ?? []).includes("payments")),
    );
    expect(reads.length).toBeGreaterThan(0);
    for (const r of l.fake.requests) {
      expect(r.method).toBe("GET");
      expect(r.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
      expect(r.status).toBe(200);
    }
    // The PaymentIntent's own event is the same payment.
    const own = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent({
        id: pi,
        amount: 1000,
        metadata: { ledger_account: "u1", ledger_credits: "10" },
        created: l.nowSec(),
      }),
    );
    await l.deliverInTurn(own);
    expect(await l.stripeEvent(own.id)).toMatchObject({ outcome: "duplicate" });
    expect(await l.purchases()).toHaveLength(1);
    expect((await l.balance("u1")).balance).toBe(10);
  });

  it("names the ledger through its subscription's metadata (under parent)", async () => {
    const l = await ledger({ secretKey: true });
    await l.setPrice(10);
    await l.account("u1");
    const { pi, event } = newInvoice(l, {}, { ledger_account: "u1" });
    await l.deliverInTurn(event);
    expect(await l.purchaseOf("u1")).toMatchObject({ paymentIntentId: pi, credits: 100 });
  });

  it("is ignored without a secret key, and Stripe is not called", async () => {
    const l = await ledger();
    await l.account("u1");
    const { event } = newInvoice(l, { ledger_account: "u1", ledger_credits: "10" });
    await l.deliverInTurn(event);
    expect(await l.stripeEvent(event.id)).toMatchObject({ outcome: "ignored", purchaseId: null });
    expect(await l.purchases()).toEqual([]);
    expect(l.fake.requests).toEqual([]);
  });

  it("of an older API version names the ledger through subscription_details.metadata", async () => {
    const l = await ledger();
    await l.setPrice(10);
    await l.account("u1");
    const pi = stripeId("pi");
    const inv = invoice({
      amountPaid: 500,
      paymentIntent: pi,
      subscriptionMetadata: { ledger_account: "u1" },
      created: l.nowSec(),
    });
    await l.deliverInTurn(stripeEvent("invoice.paid", inv, { apiVersion: LEGACY_API_VERSION }));
    expect(await l.purchaseOf("u1")).toMatchObject({ paymentIntentId: pi, credits: 50 });
    expect(l.fake.requests).toEqual([]);
  });
  it("is not accepted while Stripe's API fails, and Stripe's retry grants it", async () => {
    const l = await ledger({ secretKey: true });
    await l.account("u1");
    const { pi, event } = newInvoice(l, { ledger_account: "u1", ledger_credits: "10" });
    l.fake.faults.push({
      method: "GET",
      path: "/v1/invoice",
      times: 100,
      answer: { status: 500, error: { type: "api_error", message: "An unknown error occurred" } },
    });
    const failed = await l.deliver(event);
    expect(accepted(failed.status), failed.text).toBe(false);
    expect(l.fake.requests.length).toBeGreaterThan(0);
    expect(await l.stripeEvents()).toEqual([]);
    expect(await l.purchases()).toEqual([]);
    l.fake.faults.length = 0;
    l.t.advance(60_000);
    await l.deliverInTurn(event);
    expect(await l.purchaseOf("u1")).toMatchObject({ paymentIntentId: pi, credits: 10 });
    expect(await l.stripeEvent(event.id)).toMatchObject({ outcome: "applied", deliveries: 1 });
  }, 60_000);
});

describe("the webhook route", () => {
  it("refuses a bad, missing, stale or future signature (400 INVALID_SIGNATURE), changing nothing", async () => {
    const l = await ledger();
    await l.account("u1");
    const s = saleTo(l, "u1", "10");
    const event = paymentEvents(s).completed;
    const now = l.nowSec();
    const raw = async (body: string, headers: Record<string, string>) => {
      const res = await l.send(l.hookPath, { method: "POST", headers, body });
      return { status: res.status, body: await res.json() };
    };
    const good = signedDelivery(WEBHOOK_SECRET, event, { timestamp: now });
    const refusals = [
      await l.deliver(event, { secret: "whsec_not_the_projects_secret_0000" }),
      await l.deliver(event, { timestamp: now - 301 }),
      await l.deliver(event, { timestamp: now + 301 }),
      await raw(good.body, { "Content-Type": "application/json" }),
      await raw(good.body, { ...good.headers, "Stripe-Signature": "garbage" }),
      await raw(good.body.replace('"livemode": false', '"livemode": true'), good.headers),
      await raw(`${good.body} `, good.headers),
    ];
    for (const r of refusals) expectError(r, 400, "INVALID_SIGNATURE");
    expect(await l.stripeEvents()).toEqual([]);
    expect(await l.purchases()).toEqual([]);
    expect((await l.balance("u1")).balance).toBe(0);

    // 300 s either way is still accepted, and so is a header whose second v1 matches.
    const header = good.headers["Stripe-Signature"] as string;
    const [t, v1] = header.split(",");
    const second = await raw(good.body, {
      ...good.headers,
      "Stripe-Signature": `${t},v1=${"0".repeat(64)},${v1}`,
    });
    expect(second.status, JSON.stringify(second.body)).toBeLessThan(300);
    const other = saleTo(l, "u1", "1");
    const early = paymentEvents(other).succeeded;
    const late = paymentEvents(saleTo(l, "u1", "1")).succeeded;
    expect(accepted((await l.deliver(early, { timestamp: now - 300 })).status)).toBe(true);
    expect(accepted((await l.deliver(late, { timestamp: now + 300 })).status)).toBe(true);
    expect((await l.stripeEvents()).map((e) => e.outcome)).toEqual([
      "applied",
      "applied",
      "applied",
    ]);
    expect((await l.balance("u1")).balance).toBe(12);
  });

  it("answers 404 NOT_FOUND for an unknown, an unconnected or a disconnected project", async () => {
    const l = await ledger();
    await l.account("u1");
    const event = paymentEvents(saleTo(l, "u1", "10")).completed;
    const other = await l.t.newProject("other");
    for (const path of ["/stripe/webhooks/prj_nope", `/stripe/webhooks/${other.projectId}`]) {
      expectError(await l.deliver(event, { path }), 404, "NOT_FOUND");
    }
    await disconnectStripe(l.t.ledger.queue, "test");
    expectError(await l.deliver(event), 404, "NOT_FOUND");
    expect(await l.stripeEvents()).toEqual([]);
    expect((await l.balance("u1")).balance).toBe(0);
    const project = await l.get("/v1/project");
    expect((project.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: false,
      secretKeySet: false,
    });
  });

  it("accepts a body of 1 MiB", async () => {
    const l = await ledger();
    await l.account("u1");
    const event = paymentEvents(saleTo(l, "u1", "10")).completed;
    const object = event.data.object as Record<string, unknown>;
    object.custom_text = { submit: { message: "" } };
    const size = JSON.stringify(event, null, 2).length;
    object.custom_text = { submit: { message: "x".repeat(1024 * 1024 - size) } };
    const body = JSON.stringify(event, null, 2);
    expect(Buffer.byteLength(body)).toBe(1024 * 1024);
    const reply = await l.deliver(body);
    expect(reply.status, reply.text.slice(0, 500)).toBeLessThan(300);
    expect(accepted(reply.status)).toBe(true);
    expect((await l.balance("u1")).balance).toBe(10);
  });

  it("lists accepted events once each, newest first, with their deliveries", async () => {
    const l = await ledger();
    const created = l.nowSec();
    const events = ["a", "b", "c"].map((n) =>
      stripeEvent("customer.created", { id: `cus_${n}`, object: "customer", created }),
    );
    for (const [i, e] of events.entries()) {
      for (let n = 0; n <= i; n++) await l.deliverInTurn(e);
      l.t.advance(1000);
    }
    const page = eventsPage(await l.get("/v1/stripe/events?limit=2"));
    expect(page.events.map((e) => [e.id, e.deliveries])).toEqual([
      [events[2]?.id, 3],
      [events[1]?.id, 2],
    ]);
    expect(page.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
    const rest = eventsPage(await l.get("/v1/stripe/events?limit=2&offset=2"));
    expect(rest.events.map((e) => [e.id, e.type, e.receivedAt])).toEqual([
      [
        events[0]?.id,
        "customer.created",
        new Date(Date.parse("2026-03-02T10:00:00.000Z")).toISOString(),
      ],
    ]);
    expect(rest.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
    // Webhook retention (section 17) does not apply to them.
    l.t.advance(400 * DAY);
    await runPurgeWebhooks({ queue: l.t.ledger.queue, nowMs: l.t.now(), retentionDays: 1 });
    expect((await l.stripeEvents()).map((e) => e.id)).toEqual(events.map((e) => e.id).reverse());
  });
  it("takes the raw body as sent (UTF-8, deep nesting, a charset) and answers within 1 s", async () => {
    const l = await ledger();
    await l.account("u1");
    const event = paymentEvents(
      saleTo(l, "u1", "10", 1000, { ledger_note: "café ✓ 💳" }),
    ).completed;
    let deep: Record<string, unknown> = { last: true };
    for (let i = 0; i < 12; i++) deep = { [`level${i}`]: deep };
    (event.data.object as Record<string, unknown>).payment_method_options = deep;
    const delivery = signedDelivery(WEBHOOK_SECRET, event, { timestamp: l.nowSec() });
    const started = performance.now();
    const res = await l.send(l.hookPath, {
      method: "POST",
      headers: { ...delivery.headers, "Content-Type": "application/json; charset=utf-8" },
      body: Buffer.from(delivery.body, "utf8"),
    });
    const elapsed = performance.now() - started;
    expect(res.status, await res.text()).toBeLessThan(300);
    expect(elapsed).toBeLessThan(1000);
    expect((await l.balance("u1")).balance).toBe(10);
  });

  it("lists purchases newest first, by account, with pagination and strict input", async () => {
    const l = await ledger();
    await l.account("u1");
    await l.account("u2");
    const sales = [saleTo(l, "u1", "1"), saleTo(l, "u2", "2"), saleTo(l, "u1", "3")];
    for (const s of sales) {
      await l.deliverInTurn(paymentEvents(s).succeeded);
      l.t.advance(1000);
    }
    const all = purchasesOf(await l.get("/v1/purchases"));
    expect(all.purchases.map((p) => p.credits)).toEqual([3, 2, 1]);
    expect(all.pagination).toMatchObject({ offset: 0, totalCount: 3, hasMore: false });
    const first = purchasesOf(await l.get("/v1/purchases?externalId=u1&limit=1"));
    expect(first.purchases.map((p) => p.credits)).toEqual([3]);
    expect(first.pagination).toEqual({ limit: 1, offset: 0, totalCount: 2, hasMore: true });
    const second = purchasesOf(await l.get("/v1/purchases?accountId=u1&limit=1&offset=1"));
    expect(second.purchases.map((p) => p.credits)).toEqual([1]);
    expect(second.pagination).toEqual({ limit: 1, offset: 1, totalCount: 2, hasMore: false });
    expectError(await l.get("/v1/purchases?currency=usd"), 400, "VALIDATION_ERROR");
    expectError(await l.get("/v1/stripe/events?type=invoice.paid"), 400, "VALIDATION_ERROR");
    const other = await l.t.newProject("other");
    const theirs = await sendJson(l.send, other.key, "GET", "/v1/purchases");
    expect(purchasesOf(theirs).purchases).toEqual([]);
    const theirEvents = await sendJson(l.send, other.key, "GET", "/v1/stripe/events");
    expect(eventsPage(theirEvents).events).toEqual([]);
  });
});

describe("the project's connection", () => {
  it("shows in GET /v1/project and its update answer, never with its secrets", async () => {
    const l = await ledger({ secretKey: true });
    const got = await l.get("/v1/project");
    expect(got.status, got.text).toBe(200);
    expect((got.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: true,
      secretKeySet: true,
    });
    const updated = await l.post("/v1/project/update", { creditsPerUsd: 100 });
    expect(updated.status, updated.text).toBe(200);
    expect((updated.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: true,
      secretKeySet: true,
    });
    for (const text of [got.text, updated.text]) {
      expect(text).not.toContain(WEBHOOK_SECRET);
      expect(text).not.toContain(SECRET_KEY);
    }

    const plain = await ledger();
    const view = await plain.get("/v1/project");
    expect((view.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: true,
      secretKeySet: false,
    });
    const never = await ledger({ connect: false });
    const none = await never.get("/v1/project");
    expect((none.body as { project: { stripe: unknown } }).project.stripe).toEqual({
      connected: false,
      secretKeySet: false,
    });
  });
});
