/**
 * Helpers of the automatic top-up tests (test/auto-topup.test.ts, contract section 26): a Stripe
 * ledger of test/stripe-helpers.ts (fake clock, real HTTP, the Stripe fake) whose project has a
 * secret key and a credit price; Stripe customers seeded in the fake, with or without a default
 * payment method; accounts that pay through them; the settings set and read back, each answer
 * checked to have exactly the fields the contract lists; the worker of src/jobs/auto-topup.ts on
 * the ledger's own database, queue and clock, run on demand; and the PaymentIntent requests the
 * fake received.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { type AutoTopupWorker, startAutoTopupWorker } from "../src/jobs/auto-topup.ts";
import { silentLogger } from "../src/logger.ts";
import type { JsonReply } from "./http-client.ts";
import { type RecordedRequest, type StripeObject, stripeId } from "./stripe-fake.ts";
import { type StripeLedger, stripeLedger } from "./stripe-helpers.ts";

/** The ledger's events a top-up test reads back (stored once an endpoint subscribes). */
export const TOPUP_EVENT_TYPES = [
  "credits.purchased",
  "auto_topup.succeeded",
  "auto_topup.failed",
  "balance.low",
] as const;

/** An attempt as `lastAttempt` shows it. */
export interface Attempt {
  id: string;
  status: "pending" | "succeeded" | "failed";
  reason: string | null;
  credits: number;
  amountCents: number;
  paymentIntentId: string | null;
  createdAt: string;
  finishedAt: string | null;
}

/** The AutoTopup object of `GET /v1/accounts/auto-topup`. */
export interface AutoTopup {
  enabled: boolean;
  threshold: number;
  amount: number;
  monthlyLimit: number | null;
  toppedUpThisMonth: number;
  consecutiveFailures: number;
  disabledReason: "consecutive_failures" | null;
  lastAttempt: Attempt | null;
}

/** What `POST /v1/accounts/auto-topup` takes (`accountId` an id or externalId). */
export interface TopupSettings {
  accountId: string;
  enabled: boolean;
  threshold: number;
  amount: number;
  monthlyLimit?: number | null;
}

const TOPUP_FIELDS = [
  "amount",
  "consecutiveFailures",
  "disabledReason",
  "enabled",
  "lastAttempt",
  "monthlyLimit",
  "threshold",
  "toppedUpThisMonth",
];
const ATTEMPT_FIELDS = [
  "amountCents",
  "createdAt",
  "credits",
  "finishedAt",
  "id",
  "paymentIntentId",
  "reason",
  "status",
];

/** Asserts that `value` is an object with exactly `fields`. */
function expectFields(value: unknown, fields: string[], what: string) {
  expect(value, what).toBeTypeOf("object");
  expect(Object.keys(value as object).sort(), `${what}: ${JSON.stringify(value)}`).toEqual(fields);
}

/**
 * Asserts a 200 answer of the auto-topup routes: `{success: true, autoTopup}` with exactly the
 * contract's fields (and its `lastAttempt`'s). @returns the AutoTopup, or null
 */
export function autoTopupOf(reply: JsonReply): AutoTopup | null {
  expect(reply.status, reply.text).toBe(200);
  expectFields(reply.body, ["autoTopup", "success"], "auto-topup answer");
  const { autoTopup } = reply.body as { success: true; autoTopup: AutoTopup | null };
  if (autoTopup === null) return null;
  expectFields(autoTopup, TOPUP_FIELDS, "autoTopup");
  const last = autoTopup.lastAttempt;
  if (last !== null) {
    expectFields(last, ATTEMPT_FIELDS, "lastAttempt");
    expect(["pending", "succeeded", "failed"]).toContain(last.status);
    expect(last.createdAt).toBe(new Date(Date.parse(last.createdAt)).toISOString());
    expect(Number.isInteger(last.amountCents)).toBe(true);
    // A pending attempt has not finished; an ended one has, and a failed one says why.
    expect(last.finishedAt === null, JSON.stringify(last)).toBe(last.status === "pending");
    if (last.status === "failed") expect(last.reason).toBeTypeOf("string");
    if (last.status === "succeeded") expect(last.reason).toBeNull();
  }
  return autoTopup;
}

export interface TopupLedger extends StripeLedger {
  /**
   * Seeds a Stripe customer in the fake; with `paymentMethod` (the default) a card that is its
   * `invoice_settings.default_payment_method`. @returns its id and the card's (or null)
   */
  customer: (paymentMethod?: boolean) => { id: string; paymentMethod: string | null };
  /**
   * Creates account `externalId` paying through a new customer of the fake (with a default
   * card unless `paymentMethod: false`) and adds `credits`. @returns the account's and
   * customer's ids
   */
  payer: (
    externalId: string,
    options?: { credits?: number; paymentMethod?: boolean },
  ) => Promise<{ id: string; customer: string; paymentMethod: string | null }>;
  /** `POST /v1/accounts/auto-topup` with `body`, the answer as it came. */
  setTopup: (body: unknown) => Promise<JsonReply>;
  /** `POST /v1/accounts/auto-topup`, expected 200. @returns the AutoTopup */
  enable: (settings: TopupSettings) => Promise<AutoTopup>;
  /** `GET /v1/accounts/auto-topup?accountId=ref`, checked. @returns the AutoTopup or null */
  topup: (ref: string) => Promise<AutoTopup | null>;
  /** The account's last attempt (the top-up set). */
  last: (ref: string) => Promise<Attempt | null>;
  /** Deducts `amount` from `ref`, expected 200. */
  deduct: (ref: string, amount: number) => Promise<void>;
  /** Runs the worker's look for due attempts once. @returns how many it ran */
  runWorker: () => Promise<number>;
  /** The PaymentIntents the service asked the fake to create, in order. */
  intentPosts: () => RecordedRequest[];
  /** The number of attempts of the account in the database. */
  attemptCount: (accountId: string) => Promise<number>;
}

/**
 * A Stripe ledger (stripeLedger) with the secret key, the project's price at `creditsPerUsd`
 * (default 10: a credit costs 10 cents), an endpoint subscribed to TOPUP_EVENT_TYPES (so the
 * ledger stores them) and a worker on the ledger's database, queue and clock that runs only
 * when `runWorker` asks.
 */
export async function topupLedger(
  options: { creditsPerUsd?: number | null; secretKey?: boolean; start?: string } = {},
): Promise<TopupLedger> {
  const l = await stripeLedger({
    secretKey: options.secretKey ?? true,
    ...(options.start ? { start: options.start } : {}),
  });
  const price = options.creditsPerUsd === undefined ? 10 : options.creditsPerUsd;
  if (price !== null) await l.setPrice(price);
  const hook = await l.post("/v1/webhooks/create", {
    url: "http://127.0.0.1:9/hook",
    events: TOPUP_EVENT_TYPES,
  });
  expect(hook.status, hook.text).toBe(200);
  // Started and stopped at once (its first look finds nothing): the tests call runOnce.
  const worker: AutoTopupWorker = startAutoTopupWorker({
    db: l.t.ledger.db,
    queue: l.t.ledger.queue,
    clock: l.t.now,
    logger: silentLogger,
    pollMs: 60_000,
    leaseSeconds: 60,
    apiUrl: l.fake.url,
  });
  await worker.stop();
  const q = encodeURIComponent;

  const customer: TopupLedger["customer"] = (paymentMethod = true) => {
    // A customer id as the API takes it: `cus_` and letters and digits.
    const id = `cus_${randomBytes(9).toString("hex")}`;
    const pm = paymentMethod ? stripeId("pm") : null;
    const object: StripeObject = {
      id,
      object: "customer",
      created: l.nowSec(),
      livemode: false,
      metadata: {},
      invoice_settings: { default_payment_method: pm, custom_fields: null, footer: null },
    };
    l.fake.customers.set(id, object);
    if (pm !== null) {
      l.fake.paymentMethods.set(pm, {
        id: pm,
        object: "payment_method",
        type: "card",
        customer: id,
        card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030 },
        created: l.nowSec(),
        livemode: false,
      });
    }
    return { id, paymentMethod: pm };
  };

  const setTopup: TopupLedger["setTopup"] = (body) => l.post("/v1/accounts/auto-topup", body);
  const topup: TopupLedger["topup"] = async (ref) =>
    autoTopupOf(await l.get(`/v1/accounts/auto-topup?accountId=${q(ref)}`));

  return Object.assign(l, {
    customer,
    payer: async (externalId: string, o: { credits?: number; paymentMethod?: boolean } = {}) => {
      const c = customer(o.paymentMethod ?? true);
      const id = await l.account(externalId, { stripeCustomerId: c.id });
      if ((o.credits ?? 0) > 0) {
        const added = await l.post("/v1/accounts/credits/add", {
          accountId: externalId,
          amount: o.credits,
        });
        expect(added.status, added.text).toBe(200);
      }
      return { id, customer: c.id, paymentMethod: c.paymentMethod };
    },
    setTopup,
    enable: async (settings: TopupSettings) => {
      const set = autoTopupOf(await setTopup(settings));
      expect(set).not.toBeNull();
      return set as AutoTopup;
    },
    topup,
    last: async (ref: string) => {
      const t = await topup(ref);
      expect(t).not.toBeNull();
      return (t as AutoTopup).lastAttempt;
    },
    deduct: async (ref: string, amount: number) => {
      const r = await l.post("/v1/accounts/credits/deduct", { accountId: ref, amount });
      expect(r.status, r.text).toBe(200);
    },
    runWorker: () => worker.runOnce(),
    intentPosts: () => l.fake.requestsTo("/v1/payment_intents", "POST"),
    attemptCount: async (accountId: string) => {
      const rows = await l.t.ledger.db.read
        .selectFrom("auto_topup_attempts")
        .select("id")
        .where("account_id", "=", accountId)
        .execute();
      return rows.length;
    },
  });
}
