/**
 * Builders of the Stripe objects and events the Stripe tests deliver (contract section 25):
 * Checkout Sessions, Invoices (in the shape of API versions that carry `payment_intent` and of
 * those where an invoice only has `payments`), PaymentIntents, Charges (with the cumulative
 * `amount_refunded`), Refunds and Disputes, each as Stripe writes it; every event as
 * `{id: "evt_…", object: "event", type, created, data: {object}, livemode: false, api_version}`;
 * and `signedDelivery`, the body and headers of a delivery signed by the `stripe` library's own
 * test helper. Times are Unix seconds, as Stripe writes them: pass the fake clock's.
 */
import Stripe from "stripe";
import { type StripeObject, stripeId } from "./stripe-fake.ts";

/** The API version of the `stripe` library in use: invoices no longer carry `payment_intent`. */
export const CURRENT_API_VERSION = "2026-10-28.endive";
/** An API version in which an invoice still carries `payment_intent`. */
export const LEGACY_API_VERSION = "2024-06-20";

/** `metadata` as Stripe holds it: string values. */
export type Metadata = Record<string, string>;

/** A Stripe event. */
export interface StripeEvent {
  id: string;
  object: "event";
  type: string;
  created: number;
  data: { object: StripeObject; previous_attributes?: Record<string, unknown> };
  livemode: false;
  api_version: string;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
}

/** Unix seconds of epoch milliseconds. */
export const seconds = (ms: number) => Math.floor(ms / 1000);

/** An event of `type` about `object`. */
export function stripeEvent(
  type: string,
  object: StripeObject,
  options: { id?: string; created?: number; apiVersion?: string } = {},
): StripeEvent {
  return {
    id: options.id ?? stripeId("evt"),
    object: "event",
    type,
    created: options.created ?? (object.created as number | undefined) ?? seconds(Date.now()),
    data: { object },
    livemode: false,
    api_version: options.apiVersion ?? CURRENT_API_VERSION,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
  };
}

export interface SessionFields {
  id?: string;
  paymentIntent: string | null;
  amountTotal: number;
  currency?: string;
  paymentStatus?: "paid" | "unpaid" | "no_payment_required";
  mode?: "payment" | "subscription" | "setup";
  clientReferenceId?: string | null;
  customer?: string | null;
  metadata?: Metadata;
  created: number;
  invoice?: string | null;
}

/** A Checkout Session (`checkout.session`), complete. */
export function checkoutSession(f: SessionFields): StripeObject {
  return {
    id: f.id ?? stripeId("cs"),
    object: "checkout.session",
    amount_subtotal: f.amountTotal,
    amount_total: f.amountTotal,
    client_reference_id: f.clientReferenceId ?? null,
    created: f.created,
    currency: f.currency ?? "usd",
    customer: f.customer ?? null,
    customer_details: null,
    expires_at: f.created + 86_400,
    invoice: f.invoice ?? null,
    livemode: false,
    metadata: f.metadata ?? {},
    mode: f.mode ?? "payment",
    payment_intent: f.paymentIntent,
    payment_status: f.paymentStatus ?? "paid",
    status: "complete",
    subscription: null,
    success_url: "https://example.test/thanks",
    url: null,
  };
}

export interface InvoiceFields {
  id?: string;
  amountPaid: number;
  currency?: string;
  customer?: string | null;
  /**
   * `string`: the invoice of an older API version, carrying `payment_intent` (and
   * `subscription_details` at its top level); `undefined`: today's, which carries neither
   * (its PaymentIntent is among its `payments`, its subscription's metadata under `parent`).
   */
  paymentIntent?: string;
  metadata?: Metadata;
  /** The metadata of the subscription the invoice bills. */
  subscriptionMetadata?: Metadata;
  created: number;
  billingReason?: string;
}

/** A paid Invoice. */
export function invoice(f: InvoiceFields): StripeObject {
  const subscription = f.subscriptionMetadata ? stripeId("sub") : null;
  const base: StripeObject = {
    id: f.id ?? stripeId("in"),
    object: "invoice",
    amount_due: f.amountPaid,
    amount_paid: f.amountPaid,
    amount_remaining: 0,
    billing_reason: f.billingReason ?? (subscription ? "subscription_cycle" : "manual"),
    collection_method: "charge_automatically",
    created: f.created,
    currency: f.currency ?? "usd",
    customer: f.customer ?? null,
    livemode: false,
    metadata: f.metadata ?? {},
    paid: true,
    status: "paid",
    total: f.amountPaid,
  };
  if (f.paymentIntent !== undefined) {
    return {
      ...base,
      payment_intent: f.paymentIntent,
      charge: null,
      subscription,
      subscription_details: f.subscriptionMetadata ? { metadata: f.subscriptionMetadata } : null,
    };
  }
  return {
    ...base,
    parent: subscription
      ? {
          type: "subscription_details",
          quote_details: null,
          subscription_details: { metadata: f.subscriptionMetadata, subscription },
        }
      : null,
  };
}

/** An InvoicePayment of `invoiceId` paid by `paymentIntent` (GET /v1/invoice_payments). */
export function invoicePayment(
  invoiceId: string,
  paymentIntent: string,
  amountPaid: number,
  currency = "usd",
): StripeObject {
  return {
    id: stripeId("inpay"),
    object: "invoice_payment",
    amount_paid: amountPaid,
    amount_requested: amountPaid,
    currency,
    invoice: invoiceId,
    is_default: true,
    livemode: false,
    payment: { type: "payment_intent", payment_intent: paymentIntent },
    status: "paid",
    status_transitions: { canceled_at: null, paid_at: null },
  };
}

export interface IntentFields {
  id?: string;
  amount: number;
  amountReceived?: number;
  currency?: string;
  customer?: string | null;
  metadata?: Metadata;
  status?: string;
  latestCharge?: string | null;
  created: number;
}

/** A PaymentIntent (succeeded unless told). */
export function paymentIntent(f: IntentFields): StripeObject {
  const status = f.status ?? "succeeded";
  return {
    id: f.id ?? stripeId("pi"),
    object: "payment_intent",
    amount: f.amount,
    amount_capturable: 0,
    amount_received: f.amountReceived ?? (status === "succeeded" ? f.amount : 0),
    capture_method: "automatic",
    confirmation_method: "automatic",
    created: f.created,
    currency: f.currency ?? "usd",
    customer: f.customer ?? null,
    description: null,
    last_payment_error: null,
    latest_charge: f.latestCharge ?? null,
    livemode: false,
    metadata: f.metadata ?? {},
    payment_method: null,
    status,
  };
}

export interface ChargeFields {
  id?: string;
  paymentIntent: string;
  amount: number;
  /** The cumulative amount refunded so far. */
  amountRefunded?: number;
  currency?: string;
  customer?: string | null;
  metadata?: Metadata;
  created: number;
}

/** A succeeded Charge, with what has been refunded of it so far. */
export function charge(f: ChargeFields): StripeObject {
  const refunded = f.amountRefunded ?? 0;
  return {
    id: f.id ?? stripeId("ch"),
    object: "charge",
    amount: f.amount,
    amount_captured: f.amount,
    amount_refunded: refunded,
    captured: true,
    created: f.created,
    currency: f.currency ?? "usd",
    customer: f.customer ?? null,
    disputed: false,
    livemode: false,
    metadata: f.metadata ?? {},
    paid: true,
    payment_intent: f.paymentIntent,
    refunded: refunded >= f.amount,
    status: "succeeded",
  };
}

export interface RefundFields {
  id?: string;
  amount: number;
  charge: string;
  paymentIntent: string;
  status?: "pending" | "requires_action" | "succeeded" | "failed" | "canceled";
  currency?: string;
  created: number;
}

/** A Refund (`charge.refund.updated`'s object). */
export function refund(f: RefundFields): StripeObject {
  return {
    id: f.id ?? stripeId("re"),
    object: "refund",
    amount: f.amount,
    charge: f.charge,
    created: f.created,
    currency: f.currency ?? "usd",
    metadata: {},
    payment_intent: f.paymentIntent,
    reason: "requested_by_customer",
    status: f.status ?? "succeeded",
  };
}

export interface DisputeFields {
  id?: string;
  amount: number;
  charge: string;
  paymentIntent: string;
  status?: string;
  currency?: string;
  created: number;
}

/** A Dispute (`charge.dispute.*`'s object). */
export function dispute(f: DisputeFields): StripeObject {
  return {
    id: f.id ?? stripeId("dp"),
    object: "dispute",
    amount: f.amount,
    charge: f.charge,
    created: f.created,
    currency: f.currency ?? "usd",
    is_charge_refundable: false,
    livemode: false,
    metadata: {},
    payment_intent: f.paymentIntent,
    reason: "fraudulent",
    status: f.status ?? "needs_response",
  };
}

const webhooks = new Stripe("sk_test_x").webhooks;

/** A delivery as Stripe posts it: the raw body and its headers. */
export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

/**
 * `event` (or a raw body) as Stripe delivers it, signed with `secret` by the library's
 * `generateTestHeaderString`. `timestamp`: Unix seconds of the signature, by default now by
 * the wall clock; the service checks it against its own (fake) clock, so tests pass that one.
 */
export function signedDelivery(
  secret: string,
  event: StripeEvent | string,
  options: { timestamp?: number } = {},
): SignedDelivery {
  const payload = typeof event === "string" ? event : JSON.stringify(event, null, 2);
  const timestamp = options.timestamp ?? seconds(Date.now());
  return {
    body: payload,
    headers: {
      "Stripe-Signature": webhooks.generateTestHeaderString({ payload, secret, timestamp }),
      "Content-Type": "application/json",
    },
  };
}

/** The objects of one payment, all naming its PaymentIntent. */
export interface Sale {
  paymentIntentId: string;
  chargeId: string;
  session: StripeObject;
  invoice: StripeObject;
  intent: StripeObject;
  charge: StripeObject;
}

/**
 * One payment of `amount` cents through Checkout: its session, its invoice (older API shape,
 * carrying `payment_intent`), its PaymentIntent and its Charge, each naming the ledger with
 * `metadata` (and the session also with `clientReferenceId`, when given).
 */
export function sale(f: {
  amount: number;
  created: number;
  currency?: string;
  metadata?: Metadata;
  clientReferenceId?: string | null;
  customer?: string | null;
}): Sale {
  const paymentIntentId = stripeId("pi");
  const chargeId = stripeId("ch");
  const invoiceId = stripeId("in");
  const common = {
    created: f.created,
    ...(f.currency ? { currency: f.currency } : {}),
    customer: f.customer ?? null,
    metadata: f.metadata ?? {},
  };
  return {
    paymentIntentId,
    chargeId,
    session: checkoutSession({
      ...common,
      paymentIntent: paymentIntentId,
      amountTotal: f.amount,
      clientReferenceId: f.clientReferenceId ?? null,
      invoice: invoiceId,
    }),
    invoice: invoice({
      ...common,
      id: invoiceId,
      amountPaid: f.amount,
      paymentIntent: paymentIntentId,
    }),
    intent: paymentIntent({
      ...common,
      id: paymentIntentId,
      amount: f.amount,
      latestCharge: chargeId,
    }),
    charge: charge({ ...common, id: chargeId, paymentIntent: paymentIntentId, amount: f.amount }),
  };
}
