/**
 * The examples of the OpenAPI document (`/openapi.json`, `/docs`): one consistent story, the
 * README's tour. Customer `customer-42` buys 25.5 credits, a 9.6-credit hold is confirmed at
 * 6.96 (a Claude Sonnet 4.5 call that cost 0.0696 USD at 100 credits per USD), 1.25 credits
 * are deducted, 5.5 refunded, a second hold of 4.8 is pending, and the "Pro monthly" plan is
 * assigned. Only metadata for the documentation: nothing here is used at run time.
 */
import { type ErrorCode, UNAUTHORIZED_MESSAGE } from "../errors.ts";

export const ex = {
  projectId: "prj_01M6DSG7E0JEVV4QQ4JA0Q7WHC",
  accountId: "acc_01M7YK07B38628KR5DHES0CNDB",
  externalId: "customer-42",
  name: "Ada Lovelace",
  email: "ada@example.com",
  accountMetadata: { crmId: "hs_9921" },
  accountCreatedAt: "2026-11-21T08:19:11.331Z",

  addTxnId: "txn_01M7YK07DAYYW8HZ08H5QF75MA",
  addedAt: "2026-11-21T08:19:11.402Z",

  reservationId: "res_01M7YK1TWPMQE9XDS9P7Y34YY7",
  reservationCreatedAt: "2026-11-21T08:20:04.118Z",
  reservationExpiresAt: "2026-11-21T08:35:04.118Z",
  reservationMetadata: { operation: "chat.completion", model: "claude-sonnet-4-5" },

  confirmTxnId: "txn_01M7YK2064JJQ7EFFNV4KHAQMR",
  confirmedAt: "2026-11-21T08:20:09.540Z",
  usageId: "use_01M7YK206SH8C87Y33JWRXGN0Q",
  usageAt: "2026-11-21T08:20:09.561Z",

  deductTxnId: "txn_01M7YK6RWFSRRMMFG64WVR65TZ",
  manualTxnId: "txn_01M7YK7GNA26Q29Z9Z5Q56J7P2",
  manualAt: "2026-11-21T08:23:10.250Z",

  pendingReservationId: "res_01M7YK9YJ1A8KX8VA8ZJ92Y218",
  pendingCreatedAt: "2026-11-21T08:24:30.017Z",
  pendingExpiresAt: "2026-11-21T08:39:30.017Z",

  planId: "plan_01M6GDKW80F353AX1G8QZTJK2Y",
  planCreatedAt: "2026-11-03T10:00:00.000Z",
  accountPlanId: "ap_01M7YKM0T017F0HG562HYC4178",
  assignedAt: "2026-11-21T08:30:00.000Z",
  nextGrantAt: "2026-12-21T08:30:00.000Z",
  planCancelledAt: "2026-11-28T14:05:12.690Z",

  modelId: "claude-sonnet-4-5",
} as const;

/** The account after the whole story (balance 25.5 − 6.96 − 1.25 + 5.5 = 22.79). */
export const exampleAccount = {
  id: ex.accountId,
  developerId: ex.projectId,
  externalId: ex.externalId,
  name: ex.name,
  email: ex.email,
  balance: 22.79,
  metadata: { ...ex.accountMetadata },
  lowBalanceThreshold: 5,
  spendLimits: [{ period: "day" as const, amount: 50, timeZone: "Europe/Paris", soft: false }],
  createdAt: ex.accountCreatedAt,
  updatedAt: ex.manualAt,
  parentId: null,
  funding: "own" as const,
  fundedBy: ex.accountId,
  stripeCustomerId: null,
};

/** The account as `POST /v1/accounts/create` returns it. */
export const exampleNewAccount = {
  ...exampleAccount,
  balance: 0,
  lowBalanceThreshold: null,
  spendLimits: [],
  updatedAt: ex.accountCreatedAt,
};

/** A webhook endpoint of the project, subscribed to every event type. */
export const exWebhook = {
  id: "wh_01M7YKQ3J5ZC0V1B8WQ6T2M9XE",
  url: "https://billing.example.com/hooks/ledger",
  description: "Billing alerts",
  createdAt: "2026-11-21T08:31:00.000Z",
  secret: "whsec_MfKQ9r3KdJk0c2eMvm6pMHGkXvK4p1aZtq7V6s3yG3E=",
} as const;

export const exampleWebhook = {
  id: exWebhook.id,
  url: exWebhook.url,
  events: ["balance.low", "reservation.expired", "credits.expired", "plan.granted"] as (
    | "balance.low"
    | "reservation.expired"
    | "credits.expired"
    | "plan.granted"
  )[],
  description: exWebhook.description,
  isActive: true,
  createdAt: exWebhook.createdAt,
};

/** A delivery of a `plan.granted` event to `exampleWebhook`. */
export const exampleDelivery = {
  id: "whd_01M7YKQ4A0T6S9C2H4Q7ZV1N8K",
  eventId: "evt_01M7YKQ49ZK3W7P2N6Y5D8E1RX",
  eventType: "plan.granted" as const,
  status: "delivered" as const,
  attempts: 1,
  lastStatusCode: 200,
  lastError: null,
  nextAttemptAt: null,
  createdAt: "2026-11-21T08:31:05.000Z",
  deliveredAt: "2026-11-21T08:31:05.112Z",
};

export const exampleReservation = {
  id: ex.reservationId,
  accountId: ex.accountId,
  amount: 9.6,
  status: "confirmed" as const,
  createdAt: ex.reservationCreatedAt,
  expiresAt: ex.reservationExpiresAt,
  metadata: { ...ex.reservationMetadata },
};

export const examplePendingReservation = {
  id: ex.pendingReservationId,
  accountId: ex.accountId,
  amount: 4.8,
  status: "pending" as const,
  createdAt: ex.pendingCreatedAt,
  expiresAt: ex.pendingExpiresAt,
  metadata: { operation: "image.generate", model: "gpt-image-1" },
};

export const exampleUsageRecord = {
  id: ex.usageId,
  context: "customer" as const,
  accountId: ex.accountId,
  modelId: ex.modelId,
  usageType: "text",
  inputTokens: 9500,
  outputTokens: 3100,
  cachedTokens: 2000,
  transactionId: ex.confirmTxnId,
  estimatedCostUsd: 0.0696,
  creditsCharged: 6.96,
  creditsReversed: 0,
  createdAt: ex.usageAt,
};

/** The confirming debit, with `include=reservation,usage`. */
export const exampleConfirmTransaction = {
  id: ex.confirmTxnId,
  accountId: ex.accountId,
  type: "debit" as const,
  amount: 6.96,
  description: `Reservation ${ex.reservationId} confirmed`,
  balanceAfter: 18.54,
  metadata: { ...ex.reservationMetadata, reservationId: ex.reservationId, reservedAmount: 9.6 },
  createdAt: ex.confirmedAt,
};

export const exampleAddTransaction = {
  id: ex.addTxnId,
  accountId: ex.accountId,
  type: "credit" as const,
  amount: 25.5,
  description: "Starter pack",
  balanceAfter: 25.5,
  metadata: { paymentMethod: "card" },
  createdAt: ex.addedAt,
};

/** Its keys stand in the order of `exampleAddTransaction`'s, whatever order they are set in. */
export const exampleManualTransaction = {
  ...exampleAddTransaction,
  id: ex.manualTxnId,
  createdAt: ex.manualAt,
  amount: 5.5,
  balanceAfter: 22.79,
  description: "Refund for a failed generation",
  metadata: { ticket: "SUP-1234" },
};

export const examplePlan = {
  id: ex.planId,
  name: "Pro monthly",
  description: "500 credits every month",
  credits: 500,
  price: 49.99,
  billingPeriod: "month",
  interval: "month" as const,
  occurrences: null,
  accumulate: true,
  isActive: true,
  createdAt: ex.planCreatedAt,
};

export const exampleAccountPlan = {
  id: ex.accountPlanId,
  accountId: ex.accountId,
  planId: ex.planId,
  active: true,
  startMode: "immediate" as const,
  startedAt: ex.assignedAt,
  expiresAt: null,
  cancelledAt: null,
  nextGrantAt: ex.nextGrantAt,
  grantsMade: 1,
  plan: { id: ex.planId, name: examplePlan.name, credits: examplePlan.credits },
};

export const exampleCancelledAccountPlan = {
  ...exampleAccountPlan,
  active: false,
  cancelledAt: ex.planCancelledAt,
  nextGrantAt: null,
};

export const exampleModel = {
  modelId: ex.modelId,
  provider: "anthropic",
  displayName: "Claude Sonnet 4.5",
  modelType: "multimodal",
  tier: "balanced",
  pricing: {
    text: { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3 },
    contextWindow: 200000,
  },
  source: "litellm:claude-sonnet-4-5",
  pricesAsOf: "2026-07-24",
};

export const exampleHaikuModel = {
  modelId: "claude-haiku-4-5",
  provider: "anthropic",
  displayName: "Claude Haiku 4.5",
  modelType: "multimodal",
  tier: "economy",
  pricing: {
    text: { inputPerMillion: 1, outputPerMillion: 5, cachedInputPerMillion: 0.1 },
    contextWindow: 200000,
  },
  source: "litellm:claude-haiku-4-5",
  pricesAsOf: "2026-07-24",
};

/** An example error body of each code, as the service answers it. */
export const exampleErrors: Record<ErrorCode, { message: string; details?: unknown }> = {
  VALIDATION_ERROR: {
    message: "Invalid body.amount: Too small: expected number to be >0",
    details: [{ path: "body.amount", message: "Too small: expected number to be >0" }],
  },
  UNAUTHORIZED: { message: UNAUTHORIZED_MESSAGE },
  INSUFFICIENT_CREDITS: {
    message: "Insufficient available credits",
    details: { available: 2.5, requested: 9.6 },
  },
  SPEND_LIMIT_EXCEEDED: {
    message: "The day spend limit of 50 credits would be passed",
    details: {
      period: "day",
      limit: 50,
      timeZone: "Europe/Paris",
      spent: 46.5,
      held: 2,
      requested: 4,
      remaining: 1.5,
      resetsAt: "2026-11-21T23:00:00.000Z",
    },
  },
  ACCOUNT_NOT_FOUND: { message: "Account customer-41 not found" },
  RESERVATION_NOT_FOUND: { message: `Reservation ${ex.reservationId} not found` },
  PLAN_NOT_FOUND: { message: `Plan ${ex.planId} not found` },
  ACCOUNT_PLAN_NOT_FOUND: { message: `Account plan ${ex.accountPlanId} not found` },
  TRANSACTION_NOT_FOUND: { message: `Transaction ${ex.confirmTxnId} not found` },
  MODEL_NOT_FOUND: { message: "Model gpt-9 not found" },
  WEBHOOK_NOT_FOUND: { message: `Webhook ${exWebhook.id} not found` },
  DELIVERY_NOT_FOUND: { message: `Delivery ${exampleDelivery.id} not found` },
  NOT_FOUND: { message: "No route GET /v1/acounts" },
  DUPLICATE_EXTERNAL_ID: { message: "externalId customer-42 is already used" },
  RESERVATION_NOT_PENDING: {
    message: "Reservation is confirmed",
    details: { status: "confirmed" },
  },
  PLAN_INACTIVE: { message: `Plan ${ex.planId} is archived` },
  ACCOUNT_PLAN_NOT_ACTIVE: { message: "The assignment is no longer active" },
  BALANCE_LIMIT_EXCEEDED: { message: "The balance would exceed 9e9 credits" },
  IDEMPOTENCY_KEY_REUSED: { message: "This Idempotency-Key was used with another path or body" },
  BATCH_ABORTED: {
    message: "Not run: operation 3 of this atomic batch failed",
    details: { failedIndex: 3 },
  },
  WEBHOOK_LIMIT_REACHED: {
    message: "A project has at most 50 active webhooks; delete one first",
    details: { limit: 50 },
  },
  DELIVERY_NOT_FAILED: {
    message: `Delivery ${exampleDelivery.id} is delivered; only a failed delivery is retried`,
    details: { status: "delivered" },
  },
  NOT_REVERSIBLE: { message: "A grant expiry cannot be reversed" },
  REVERSAL_EXCEEDS_ORIGINAL: {
    message: "The reversals would pass the original's amount",
    details: { reversible: 2.5 },
  },
  REVERSAL_EXCEEDS_REMAINING: {
    message: "More than can still be reversed",
    details: { reversible: 1.25 },
  },
  ACCOUNT_BUSY: {
    message: "Account acme-corp is busy: it or an account below it has a pending reservation",
    details: { reason: "reservation", accountId: ex.accountId, externalId: ex.externalId },
  },
  FUNDED_BY_PARENT: {
    message: "Account team-research is funded by its parent: it holds no credits of its own",
    details: { accountId: ex.accountId, externalId: "team-research" },
  },
  DUPLICATE_STRIPE_CUSTOMER: {
    message: "stripeCustomerId cus_Q0abc is already used by account customer-7",
  },
  INVALID_SIGNATURE: { message: "Invalid Stripe-Signature: no signature matches" },
  STRIPE_NOT_CONFIGURED: {
    message: "An automatic top-up needs the account's stripeCustomerId",
    details: { missing: ["the account's stripeCustomerId"] },
  },
  PAYLOAD_TOO_LARGE: { message: "Request body is larger than 65536 bytes" },
  METHOD_NOT_ALLOWED: {
    message: "/v1/accounts/create does not serve GET; it serves POST",
    details: { allow: ["POST"] },
  },
  HEADERS_TOO_LARGE: { message: "The request's URL or headers are too large" },
  UNSUPPORTED_MEDIA_TYPE: { message: "Content-Type must be application/json" },
  INTERNAL_ERROR: { message: "An unexpected error occurred" },
  SERVICE_UNAVAILABLE: {
    message: "The database is unavailable; retry later (with the same Idempotency-Key)",
  },
};
