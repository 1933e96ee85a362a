/**
 * What a Stripe event says, read from its object (docs/api.md#selling-credits-through-stripe):
 * a payment that may grant credits, a change to its refunds or disputes, or nothing for the
 * ledger (`ignored`, with its reason). Only the fields the rules use are read, each checked; an
 * event of another shape is ignored, never an error, since Stripe's answer must be 2xx.
 * Amounts are integers in the currency's smallest unit, as Stripe gives them; times are seconds.
 */
import { z } from "zod";

/** A payment event's facts. */
export interface PaymentFact {
  kind: "payment";
  paymentIntentId: string;
  /** The account hints in order: `client_reference_id`, `metadata.ledger_account`. */
  accountRefs: string[];
  /** The object's `customer` id, if any. */
  customerId: string | null;
  /** The ledger's `ledger_` metadata (an invoice's subscription's under its own). */
  metadata: Record<string, string>;
  amountPaid: number;
  currency: string;
  /** The Stripe object's `created`, seconds. */
  createdSec: number;
  checkoutSessionId: string | null;
  invoiceId: string | null;
}

/** An invoice whose PaymentIntent must be read from its payments (a secret key's API call). */
export interface InvoiceWithoutIntent {
  kind: "invoice_without_intent";
  invoiceId: string;
  /** The fact once the PaymentIntent is known. */
  payment: Omit<PaymentFact, "paymentIntentId">;
}

/** A change to a payment's refunds or disputes. */
export type AdjustmentFact =
  | {
      kind: "charge_refunded";
      paymentIntentId: string;
      /** The Charge's cumulative `amount_refunded`. */
      amountRefunded: number;
      /** The Refunds the Charge lists, when it lists them. */
      refunds: RefundSeen[];
      createdSec: number;
    }
  | { kind: "refund_updated"; paymentIntentId: string; refund: RefundSeen; createdSec: number }
  | {
      kind: "dispute";
      paymentIntentId: string;
      disputeId: string;
      amount: number;
      change: "withdrawn" | "reinstated";
    };

/** A Refund as an event shows it. */
export interface RefundSeen {
  id: string;
  amount: number;
  status: string;
}

/** An event that asks nothing of the ledger, with the PaymentIntent it names when known. */
export interface IgnoredFact {
  kind: "ignored";
  reason: string;
  paymentIntentId: string | null;
}

/**
 * A PaymentIntent that failed or was canceled: it fails the automatic top-up attempt it names
 * (`metadata.ledger_auto_topup`, docs/api.md#automatic-top-up).
 */
export interface IntentFailedFact {
  kind: "intent_failed";
  paymentIntentId: string;
  attemptId: string;
  /** The error's `decline_code`, else its `code`; `canceled` for a canceled PaymentIntent. */
  reason: string;
}

export type EventFact =
  | PaymentFact
  | InvoiceWithoutIntent
  | AdjustmentFact
  | IgnoredFact
  | IntentFailedFact;

/** The envelope of every Stripe event. */
export const stripeEventSchema = z.object({
  id: z.string().min(1).max(255),
  type: z.string().min(1).max(255),
  created: z.number().int(),
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});
export type StripeEvent = z.infer<typeof stripeEventSchema>;

const amount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const id = z.string().min(1).max(255);
/** An expandable reference: the id, or the object with its id. */
const ref = z.union([id, z.object({ id })]).transform((v) => (typeof v === "string" ? v : v.id));
const metadata = z.record(z.string(), z.string()).nullish();

const sessionSchema = z.object({
  id,
  mode: z.string(),
  payment_status: z.string(),
  payment_intent: ref.nullish(),
  client_reference_id: z.string().nullish(),
  customer: ref.nullish(),
  metadata,
  amount_total: amount.nullish(),
  currency: z.string().nullish(),
  created: z.number().int(),
});

const invoiceSchema = z.object({
  id,
  amount_paid: amount,
  currency: z.string(),
  customer: ref.nullish(),
  payment_intent: ref.nullish(),
  metadata,
  subscription_details: z.object({ metadata }).nullish(),
  parent: z.object({ subscription_details: z.object({ metadata }).nullish() }).nullish(),
  payments: z
    .object({
      data: z.array(
        z.object({
          status: z.string().nullish(),
          payment: z.object({ payment_intent: ref.nullish() }).nullish(),
        }),
      ),
    })
    .nullish(),
  created: z.number().int(),
});

const intentSchema = z.object({
  id,
  amount_received: amount,
  currency: z.string(),
  customer: ref.nullish(),
  metadata,
  created: z.number().int(),
});

const failedIntentSchema = z.object({
  id,
  metadata,
  last_payment_error: z
    .object({ code: z.string().nullish(), decline_code: z.string().nullish() })
    .nullish(),
});

const refundSchema = z.object({
  id,
  amount,
  status: z.string().nullish(),
  payment_intent: ref.nullish(),
});

const chargeSchema = z.object({
  id,
  amount_refunded: amount,
  payment_intent: ref.nullish(),
  refunds: z.object({ data: z.array(refundSchema) }).nullish(),
});

const disputeSchema = z.object({
  id,
  amount,
  payment_intent: ref.nullish(),
});

/** Whether `m` names the ledger: a key starting `ledger_`. */
function namesLedger(m: Record<string, string> | null | undefined): boolean {
  return m != null && Object.keys(m).some((k) => k.startsWith("ledger_"));
}

const ignored = (reason: string, paymentIntentId: string | null = null): IgnoredFact => ({
  kind: "ignored",
  reason,
  paymentIntentId,
});

/**
 * The facts of `event`. Never throws: an object that is not of the shape its type promises is
 * `ignored` with reason `malformed_object`.
 */
export function factOf(event: StripeEvent): EventFact {
  const object = event.data.object;
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
      return sessionFact(object);
    case "invoice.paid":
      return invoiceFact(object);
    case "payment_intent.succeeded":
      return intentFact(object);
    case "payment_intent.payment_failed":
    case "payment_intent.canceled":
      return failedIntentFact(event);
    case "charge.refunded": {
      const charge = chargeSchema.safeParse(object);
      if (!charge.success) return ignored("malformed_object");
      const pi = charge.data.payment_intent;
      if (pi == null) return ignored("no_payment_intent");
      return {
        kind: "charge_refunded",
        paymentIntentId: pi,
        amountRefunded: charge.data.amount_refunded,
        refunds: (charge.data.refunds?.data ?? []).map((r) => ({
          id: r.id,
          amount: r.amount,
          status: r.status ?? "pending",
        })),
        createdSec: event.created,
      };
    }
    case "charge.refund.updated": {
      const refund = refundSchema.safeParse(object);
      if (!refund.success) return ignored("malformed_object");
      const pi = refund.data.payment_intent;
      if (pi == null) return ignored("no_payment_intent");
      const { id: refundId, amount: refunded, status } = refund.data;
      return {
        kind: "refund_updated",
        paymentIntentId: pi,
        refund: { id: refundId, amount: refunded, status: status ?? "pending" },
        createdSec: event.created,
      };
    }
    case "charge.dispute.funds_withdrawn":
    case "charge.dispute.funds_reinstated": {
      const dispute = disputeSchema.safeParse(object);
      if (!dispute.success) return ignored("malformed_object");
      const pi = dispute.data.payment_intent;
      if (pi == null) return ignored("no_payment_intent");
      return {
        kind: "dispute",
        paymentIntentId: pi,
        disputeId: dispute.data.id,
        amount: dispute.data.amount,
        change: event.type === "charge.dispute.funds_withdrawn" ? "withdrawn" : "reinstated",
      };
    }
    default:
      return ignored("event_type_not_used");
  }
}

function sessionFact(object: Record<string, unknown>): EventFact {
  const parsed = sessionSchema.safeParse(object);
  if (!parsed.success) return ignored("malformed_object");
  const s = parsed.data;
  const pi = s.payment_intent ?? null;
  if (s.mode !== "payment") return ignored(`mode_${s.mode}`, pi);
  if (s.payment_status !== "paid") return ignored(`payment_status_${s.payment_status}`, pi);
  if (s.client_reference_id == null && !namesLedger(s.metadata)) {
    return ignored("not_for_ledger", pi);
  }
  if (pi === null) return ignored("no_payment_intent");
  const meta = s.metadata ?? {};
  return {
    kind: "payment",
    paymentIntentId: pi,
    accountRefs: [s.client_reference_id, meta.ledger_account].filter(
      (r): r is string => r != null && r !== "",
    ),
    customerId: s.customer ?? null,
    metadata: meta,
    amountPaid: s.amount_total ?? 0,
    currency: (s.currency ?? "").toLowerCase(),
    createdSec: s.created,
    checkoutSessionId: s.id,
    invoiceId: null,
  };
}

function invoiceFact(object: Record<string, unknown>): EventFact {
  const parsed = invoiceSchema.safeParse(object);
  if (!parsed.success) return ignored("malformed_object");
  const inv = parsed.data;
  const subscription =
    inv.parent?.subscription_details?.metadata ?? inv.subscription_details?.metadata ?? null;
  const paidIntent = inv.payments?.data.find((p) => p.status == null || p.status === "paid")
    ?.payment?.payment_intent;
  const pi = inv.payment_intent ?? paidIntent ?? null;
  if (inv.amount_paid <= 0) return ignored("nothing_paid", pi);
  if (!namesLedger(inv.metadata) && !namesLedger(subscription)) {
    return ignored("not_for_ledger", pi);
  }
  const meta = { ...(subscription ?? {}), ...(inv.metadata ?? {}) };
  const payment = {
    kind: "payment" as const,
    accountRefs: meta.ledger_account ? [meta.ledger_account] : [],
    customerId: inv.customer ?? null,
    metadata: meta,
    amountPaid: inv.amount_paid,
    currency: inv.currency.toLowerCase(),
    createdSec: inv.created,
    checkoutSessionId: null,
    invoiceId: inv.id,
  };
  if (pi === null) return { kind: "invoice_without_intent", invoiceId: inv.id, payment };
  return { ...payment, paymentIntentId: pi };
}

function intentFact(object: Record<string, unknown>): EventFact {
  const parsed = intentSchema.safeParse(object);
  if (!parsed.success) return ignored("malformed_object");
  const pi = parsed.data;
  if (!namesLedger(pi.metadata)) return ignored("not_for_ledger", pi.id);
  const meta = pi.metadata ?? {};
  return {
    kind: "payment",
    paymentIntentId: pi.id,
    accountRefs: meta.ledger_account ? [meta.ledger_account] : [],
    customerId: pi.customer ?? null,
    metadata: meta,
    amountPaid: pi.amount_received,
    currency: pi.currency.toLowerCase(),
    createdSec: pi.created,
    checkoutSessionId: null,
    invoiceId: null,
  };
}

/** A failed or canceled PaymentIntent: the top-up attempt it names fails (else ignored). */
function failedIntentFact(event: StripeEvent): EventFact {
  const object = event.data.object;
  const parsed = failedIntentSchema.safeParse(object);
  if (!parsed.success) return ignored("malformed_object");
  const pi = parsed.data;
  const attemptId = pi.metadata?.ledger_auto_topup;
  if (attemptId === undefined) return ignored("not_an_auto_topup", pi.id);
  const error = pi.last_payment_error;
  return {
    kind: "intent_failed",
    paymentIntentId: pi.id,
    attemptId,
    reason:
      event.type === "payment_intent.canceled"
        ? "canceled"
        : error?.decline_code || error?.code || "payment_failed",
  };
}
