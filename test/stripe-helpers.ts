/**
 * Helpers of the Stripe tests (test/stripe.test.ts): a ledger on a fake clock served over real
 * HTTP, its project connected to Stripe (a webhook secret and, when asked, a secret key) and
 * pointed at a Stripe fake (test/stripe-fake.ts) with `STRIPE_API_URL`; deliveries of signed
 * events to `POST /stripe/webhooks/{projectId}`; the purchases and Stripe events read back,
 * each checked to have exactly the fields contract section 25 lists; and the ledger's own
 * stored webhook events.
 */
import { expect } from "vitest";
import { connectStripe } from "../src/stripe/settings.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { fetchFrom, type JsonReply, type JsonRequest, type Send, sendJson } from "./http-client.ts";
import { type StripeEvent, seconds, signedDelivery } from "./stripe-events.ts";
import { type StripeFake, startStripeFake } from "./stripe-fake.ts";

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** The ledger's events about purchases (and the reversal's), subscribed by `subscribe`. */
export const PURCHASE_EVENT_TYPES = [
  "credits.purchased",
  "credits.clawed_back",
  "purchase.clawback_incomplete",
  "transaction.reversed",
  "credits.expired",
] as const;

/** A purchase as `GET /v1/purchases` lists it. */
export interface Purchase {
  id: string;
  accountId: string;
  externalId: string | null;
  paymentIntentId: string;
  credits: number;
  amountPaid: number;
  currency: string;
  amountRefunded: number;
  creditsClawedBack: number;
  creditsUncollected: number;
  status: "paid" | "partially_refunded" | "refunded" | "disputed";
  transactionId: string;
  createdAt: string;
}

/** An accepted Stripe event as `GET /v1/stripe/events` lists it. */
export interface ListedEvent {
  id: string;
  type: string;
  receivedAt: string;
  deliveries: number;
  outcome: "applied" | "duplicate" | "pending" | "ignored";
  reason: string | null;
  purchaseId: string | null;
}

export interface Pagination {
  limit: number;
  offset: number;
  totalCount: number;
  hasMore: boolean;
}

const PURCHASE_FIELDS = [
  "accountId",
  "amountPaid",
  "amountRefunded",
  "createdAt",
  "credits",
  "creditsClawedBack",
  "creditsUncollected",
  "currency",
  "externalId",
  "id",
  "paymentIntentId",
  "status",
  "transactionId",
];
const EVENT_FIELDS = ["deliveries", "id", "outcome", "purchaseId", "reason", "receivedAt", "type"];
const PAGINATION_FIELDS = ["hasMore", "limit", "offset", "totalCount"];

/** Asserts that `value` is an object with exactly `fields` (sorted). */
function expectFields(value: unknown, fields: string[], what: string) {
  expect(value, what).toBeTypeOf("object");
  expect(Object.keys(value as object).sort(), `${what}: ${JSON.stringify(value)}`).toEqual(fields);
}

/** Asserts a `GET /v1/purchases` answer's shape. @returns its purchases and pagination */
export function purchasesOf(reply: JsonReply): { purchases: Purchase[]; pagination: Pagination } {
  expect(reply.status, reply.text).toBe(200);
  expectFields(reply.body, ["pagination", "purchases", "success"], "purchases answer");
  const body = reply.body as { success: true; purchases: Purchase[]; pagination: Pagination };
  expect(body.success).toBe(true);
  expectFields(body.pagination, PAGINATION_FIELDS, "pagination");
  for (const p of body.purchases) {
    expectFields(p, PURCHASE_FIELDS, "purchase");
    expect(p.createdAt).toBe(new Date(Date.parse(p.createdAt)).toISOString());
    expect(["paid", "partially_refunded", "refunded", "disputed"]).toContain(p.status);
    expect(Number.isInteger(p.amountPaid) && Number.isInteger(p.amountRefunded)).toBe(true);
    expect(p.currency).toBe(p.currency.toLowerCase());
  }
  return { purchases: body.purchases, pagination: body.pagination };
}

/** Asserts a `GET /v1/stripe/events` answer's shape. @returns its events and pagination */
export function eventsOf(reply: JsonReply): { events: ListedEvent[]; pagination: Pagination } {
  expect(reply.status, reply.text).toBe(200);
  expectFields(reply.body, ["events", "pagination", "success"], "events answer");
  const body = reply.body as { success: true; events: ListedEvent[]; pagination: Pagination };
  expect(body.success).toBe(true);
  expectFields(body.pagination, PAGINATION_FIELDS, "pagination");
  for (const e of body.events) {
    expectFields(e, EVENT_FIELDS, "event");
    expect(["applied", "duplicate", "pending", "ignored"]).toContain(e.outcome);
    expect(e.receivedAt).toBe(new Date(Date.parse(e.receivedAt)).toISOString());
    if (e.outcome === "ignored") expect(e.reason, JSON.stringify(e)).toBeTypeOf("string");
  }
  return { events: body.events, pagination: body.pagination };
}

export interface StripeLedger {
  t: TestLedger;
  fake: StripeFake;
  base: string;
  send: Send;
  /** The webhook secret the project is connected with. */
  secret: string;
  /** The path Stripe posts the project's events to. */
  hookPath: string;
  post: (path: string, body: unknown, request?: JsonRequest) => Promise<JsonReply>;
  get: (path: string) => Promise<JsonReply>;
  /** The fake clock's now in Unix seconds (what Stripe objects' `created` are in). */
  nowSec: () => number;
  /**
   * Delivers `event` once, signed with the project's secret (or `options.secret`) at the fake
   * clock's now (or `options.timestamp`). @returns the answer (its body parsed when JSON)
   */
  deliver: (
    event: StripeEvent | string,
    options?: { secret?: string; timestamp?: number; path?: string },
  ) => Promise<{ status: number; body: unknown; text: string }>;
  /** Delivers every event `times` times, all at once, interleaved. @returns the statuses */
  deliverAll: (events: StripeEvent[], times?: number) => Promise<number[]>;
  /** Delivers each event in turn, each expected to be accepted (2xx). */
  deliverInTurn: (...events: StripeEvent[]) => Promise<void>;
  /** `GET /v1/purchases` (query as given), checked. */
  purchases: (query?: string) => Promise<Purchase[]>;
  /** The only purchase of `ref`'s account (an id or externalId). */
  purchaseOf: (ref: string) => Promise<Purchase>;
  /** `GET /v1/stripe/events` (query as given), checked. */
  stripeEvents: (query?: string) => Promise<ListedEvent[]>;
  /** One listed Stripe event by its id. */
  stripeEvent: (id: string) => Promise<ListedEvent | undefined>;
  /** Creates account `externalId` (extra fields optional). @returns its id */
  account: (externalId: string, fields?: Record<string, unknown>) => Promise<string>;
  /** Sets the project's credit price. */
  setPrice: (creditsPerUsd: number | null) => Promise<void>;
  /** Creates a webhook endpoint of the project for the purchase events (so they are stored). */
  subscribe: () => Promise<void>;
  balance: (ref: string) => Promise<{ balance: number; reserved: number; available: number }>;
  /** The account's ledger entries, oldest first. */
  txns: (ref: string) => Promise<Txn[]>;
  /** The account's grants, oldest first. */
  grants: (ref: string) => Promise<Grant[]>;
  /** The `data` of the stored webhook events of `type`, oldest first. */
  events: (type: string) => Promise<Record<string, unknown>[]>;
  close: () => Promise<void>;
}

/** A ledger entry as `GET /v1/transactions` lists it (the fields the tests read). */
export interface Txn {
  id: string;
  accountId: string;
  type: "credit" | "debit";
  amount: number;
  balanceAfter: number;
  metadata: Record<string, unknown> | null;
  reversalOf: string | null;
  onBehalfOf: string | null;
  amountReversed: number;
}

/** A grant as `GET /v1/accounts/grants` lists it. */
export interface Grant {
  id: string;
  transactionId: string | null;
  amount: number;
  remaining: number;
  priority: number;
  expiresAt: string | null;
  status: "active" | "spent" | "expired";
}

/** The secret tests connect projects with. */
export const WEBHOOK_SECRET = "whsec_test_0123456789abcdefghijklmnop";
/** The secret key tests connect with when the project may call Stripe. */
export const SECRET_KEY = "sk_test_ledger_0123456789abcdef";

/**
 * A fresh ledger on a fake clock at `start`, listening on a random port, its project "test"
 * connected to Stripe with WEBHOOK_SECRET (and SECRET_KEY when `secretKey`), calling a fresh
 * Stripe fake.
 */
export async function stripeLedger(
  options: { start?: string; secretKey?: boolean; connect?: boolean } = {},
): Promise<StripeLedger> {
  const fake = await startStripeFake();
  const t = await makeLedger({
    fakeClock: options.start ?? "2026-03-02T10:00:00.000Z",
    env: { STRIPE_API_URL: fake.url },
  });
  fake.now = t.now;
  if (options.secretKey) fake.secretKey = SECRET_KEY;
  if (options.connect !== false) {
    const connected = await connectStripe(t.ledger.queue, "test", {
      webhookSecret: WEBHOOK_SECRET,
      ...(options.secretKey ? { secretKey: SECRET_KEY } : {}),
    });
    expect(connected.projectId).toBe(t.projectId);
  }
  const base = await t.listen();
  const send = fetchFrom(base);
  const hookPath = `/stripe/webhooks/${t.projectId}`;
  const post: StripeLedger["post"] = (path, body, request = {}) =>
    sendJson(send, t.key, "POST", path, { ...request, body });
  const get: StripeLedger["get"] = (path) => sendJson(send, t.key, "GET", path);
  const q = encodeURIComponent;
  const deliver: StripeLedger["deliver"] = async (event, o = {}) => {
    const delivery = signedDelivery(o.secret ?? WEBHOOK_SECRET, event, {
      timestamp: o.timestamp ?? seconds(t.now()),
    });
    const res = await send(o.path ?? hookPath, {
      method: "POST",
      headers: delivery.headers,
      body: delivery.body,
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, body, text };
  };
  const stripeEvents = async (query = "limit=100") =>
    eventsOf(await get(`/v1/stripe/events?${query}`)).events;
  const purchases = async (query = "limit=100") =>
    purchasesOf(await get(`/v1/purchases?${query}`)).purchases;
  const l: StripeLedger = {
    t,
    fake,
    base,
    send,
    secret: WEBHOOK_SECRET,
    hookPath,
    post,
    get,
    nowSec: () => seconds(t.now()),
    deliver,
    deliverAll: async (events, times = 1) => {
      const all = Array.from({ length: times }, () => events).flat();
      const replies = await Promise.all(all.map((e) => deliver(e)));
      return replies.map((r) => r.status);
    },
    deliverInTurn: async (...events) => {
      for (const e of events) {
        const r = await deliver(e);
        expect(r.status, `${e.type}: ${r.text}`).toBeGreaterThanOrEqual(200);
        expect(r.status, `${e.type}: ${r.text}`).toBeLessThan(300);
      }
    },
    purchases,
    purchaseOf: async (ref) => {
      const key = ref.startsWith("acc_") ? "accountId" : "externalId";
      const list = await purchases(`${key}=${q(ref)}`);
      expect(list).toHaveLength(1);
      return list[0] as Purchase;
    },
    stripeEvents,
    stripeEvent: async (id) => (await stripeEvents()).find((e) => e.id === id),
    account: async (externalId, fields = {}) => {
      const reply = await post("/v1/accounts/create", { externalId, ...fields });
      expect(reply.status, reply.text).toBe(200);
      return (reply.body as { account: { id: string } }).account.id;
    },
    setPrice: async (creditsPerUsd) => {
      const reply = await post("/v1/project/update", { creditsPerUsd });
      expect(reply.status, reply.text).toBe(200);
    },
    subscribe: async () => {
      const reply = await post("/v1/webhooks/create", {
        url: "http://127.0.0.1:9/hook",
        events: PURCHASE_EVENT_TYPES,
      });
      expect(reply.status, reply.text).toBe(200);
    },
    balance: async (ref) => {
      const reply = await get(`/v1/accounts/balance?accountId=${q(ref)}`);
      expect(reply.status, reply.text).toBe(200);
      const { balance, reserved, available } = reply.body as {
        balance: number;
        reserved: number;
        available: number;
      };
      return { balance, reserved, available };
    },
    txns: async (ref) => {
      const reply = await get(`/v1/transactions?accountId=${q(ref)}&limit=500`);
      expect(reply.status, reply.text).toBe(200);
      return [...(reply.body as { items: Txn[] }).items].reverse();
    },
    grants: async (ref) => {
      const reply = await get(`/v1/accounts/grants?accountId=${q(ref)}&limit=1000`);
      expect(reply.status, reply.text).toBe(200);
      return [...(reply.body as { grants: Grant[] }).grants].reverse();
    },
    events: async (type) =>
      (
        await t.ledger.db.read
          .selectFrom("webhook_events")
          .select("payload")
          .where("type", "=", type)
          .orderBy("created_at_ms")
          .orderBy("id")
          .execute()
      ).map((e) => (JSON.parse(e.payload) as { data: Record<string, unknown> }).data),
    close: async () => {
      await t.close();
      await fake.close();
    },
  };
  return l;
}

/** True for a 2xx status. */
export const accepted = (status: number) => status >= 200 && status < 300;
