/**
 * The shapes of the `/v1` answers the console reads (docs/api.md#endpoints), as `lossless-json`
 * parses them: every number is a `Num` holding the literal the service wrote.
 */
import type { Num } from "./api.ts";

export interface Pagination {
  limit: Num;
  offset: Num;
  totalCount: Num;
  hasMore: boolean;
}

export interface Account {
  id: string;
  externalId: string;
  name: string;
  email: string;
  balance: Num;
  lowBalanceThreshold: Num | null;
  createdAt: string;
  /** The account above it (docs/api.md#pools-and-members); null for a root. */
  parentId: string | null;
  /** `own`: it pays its debits; `parent`: its pool does, and it holds no credits of its own. */
  funding: "own" | "parent";
  /** Its pool: the nearest account at or above it that funds itself (its own id when it does). */
  fundedBy: string;
  /** Its Stripe customer (docs/api.md#selling-credits-through-stripe); null when unset. */
  stripeCustomerId: string | null;
}

/** One spend limit's current window (`GET /v1/accounts/limits`). */
export interface SpendLimitWindow {
  period: "hour" | "day" | "week" | "month";
  amount: Num;
  timeZone: string;
  soft: boolean;
  windowStart: string;
  resetsAt: string;
  spent: Num;
  held: Num;
  remaining: Num;
}

export interface SpendLimits {
  accountId: string;
  externalId: string;
  available: Num;
  spendable: Num;
  limits: SpendLimitWindow[];
}

export interface AccountList {
  accounts: Account[];
  pagination?: Pagination;
}

export interface Balance {
  accountId: string;
  externalId: string;
  balance: Num;
  reserved: Num;
  available: Num;
  /** The pool whose figures these are: the account's own id when it funds itself. */
  fundedBy: string;
}

export interface Grant {
  id: string;
  transactionId: string | null;
  amount: Num;
  remaining: Num;
  priority: Num;
  expiresAt: string | null;
  createdAt: string;
  status: "active" | "expired" | "spent";
}

export interface Reservation {
  id: string;
  amount: Num;
  status: string;
  createdAt: string;
  expiresAt: string;
  metadata: Record<string, unknown>;
}

export interface Transaction {
  id: string;
  type: "credit" | "debit";
  amount: Num;
  description: string;
  balanceAfter: Num;
  /** An expiry debit says so in `metadata.reason` (docs/api.md#grants-and-expiry). */
  metadata?: Record<string, unknown>;
  createdAt: string;
  /** A reversal: the transaction it reverses (docs/api.md#reversals); else null. */
  reversalOf?: string | null;
  /** What this transaction's reversals add up to so far (0 when none). */
  amountReversed?: Num;
  /** A pool's entry for a member below it: the member (docs/api.md#pools-and-members); else null. */
  onBehalfOf?: string | null;
  /** Either half of a transfer: the transfer's id (docs/api.md#transfers); else null. */
  transferId?: string | null;
}

/** The answer of `POST /v1/accounts/transfer` (docs/api.md#transfers). */
export interface TransferAnswer {
  success: true;
  transferId: string;
  /** The debit on the source. */
  debit: Transaction;
  /** The credit (a grant) on the destination. */
  credit: Transaction;
  /** The source's balance after it. */
  fromBalance: Num;
  /** The destination's balance after it. */
  toBalance: Num;
}

/** The answer of `POST /v1/transactions/reverse` (docs/api.md#reversals). */
export interface ReverseAnswer {
  success: true;
  /** The reversal booked. */
  transaction: Transaction;
  reversedTransactionId: string;
  /** The original's reversals so far, this one included. */
  amountReversed: Num;
  /** What may still be reversed of the original after this one. */
  reversible: Num;
  balance: Num;
  available: Num;
}

export interface UsageGroup {
  key: string | null;
  externalId?: string | null;
  requestCount: Num;
  inputTokens: Num;
  cachedTokens: Num;
  outputTokens: Num;
  costUsd: Num;
  /** The credits the group's records were charged (docs/api.md#usage-over-time). */
  creditsCharged?: Num;
  /** The credits given back by reversals, where the API reports them. */
  creditsReversed?: Num;
}

export interface UsageSummary {
  totalCostUsd: Num;
  totalInputTokens: Num;
  totalOutputTokens: Num;
  creditsCharged?: Num;
  creditsReversed?: Num;
  groups?: UsageGroup[];
}

/**
 * A payment through Stripe that granted credits (`GET /v1/purchases`,
 * docs/api.md#selling-credits-through-stripe). `amountPaid` and `amountRefunded` are integers in
 * the currency's smallest unit, as Stripe gives them; `currency` is lower case.
 */
export interface Purchase {
  id: string;
  accountId: string;
  externalId: string;
  paymentIntentId: string;
  credits: Num;
  amountPaid: Num;
  currency: string;
  amountRefunded: Num;
  /** Credits taken back by refunds, disputes and reversals of its credit. */
  creditsClawedBack: Num;
  /** Credits a refund or dispute asked for that were already spent or held. */
  creditsUncollected: Num;
  status: "paid" | "partially_refunded" | "refunded" | "disputed";
  /** The purchase's credit: in the account's ledger, or its pool's for a member. */
  transactionId: string;
  createdAt: string;
}

/** The API key's project (`GET /v1/project`): `creditsPerUsd` is null until a price is set. */
export interface Project {
  id: string;
  name: string;
  creditsPerUsd: Num | null;
  createdAt: string;
}

export interface Model {
  modelId: string;
  provider: string;
  displayName: string;
  tier: string;
  pricing: {
    text: { inputPerMillion: Num; outputPerMillion: Num; cachedInputPerMillion?: Num };
    contextWindow: Num;
  };
  pricesAsOf: string;
}

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description: string;
  isActive: boolean;
  createdAt: string;
}

export interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  attempts: Num;
  lastStatusCode: Num | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface Plan {
  id: string;
  name: string;
  description: string;
  credits: Num;
  price: Num;
  billingPeriod: string;
  interval: "1d" | "week" | "month";
  occurrences: Num | null;
  accumulate: boolean;
  isActive: boolean;
  createdAt: string;
}

export interface AccountPlan {
  id: string;
  accountId: string;
  planId: string;
  active: boolean;
  startMode: "immediate" | "next_interval";
  startedAt: string;
  expiresAt: string | null;
  cancelledAt: string | null;
  nextGrantAt: string | null;
  grantsMade: Num;
  plan: { id: string; name: string; credits: Num };
}

/**
 * One attempt of an account's automatic top-up (docs/api.md#automatic-top-up): `credits` it
 * buys, `amountCents` in USD cents, fixed when it was queued; `reason` why it failed (a Stripe
 * decline or error code, or the ledger's own: `monthly_limit`, `no_payment_method`, …).
 */
export interface AutoTopupAttempt {
  id: string;
  status: "pending" | "succeeded" | "failed";
  reason: string | null;
  credits: Num;
  amountCents: Num;
  paymentIntentId: string | null;
  createdAt: string;
  finishedAt: string | null;
}

/** An account's automatic top-up (`GET /v1/accounts/auto-topup`); credits throughout. */
export interface AutoTopup {
  enabled: boolean;
  threshold: Num;
  amount: Num;
  /** Credits per UTC month; null: none. */
  monthlyLimit: Num | null;
  /** The credits of this UTC month's succeeded and in-flight attempts. */
  toppedUpThisMonth: Num;
  consecutiveFailures: Num;
  /** Why it turned itself off; null when it did not. */
  disabledReason: "consecutive_failures" | null;
  lastAttempt: AutoTopupAttempt | null;
}
