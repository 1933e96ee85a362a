/**
 * The database's tables as Kysely types (one interface for all, as in Kysely's example app).
 * Columns are snake_case; units are in the names: `_micros` micro-credits, `_micros_per_m`
 * micro-USD per million tokens, `cost_micro_usd` + `cost_pico_rem` pico-USD, `_ms` Unix epoch milliseconds.
 * Booleans are 0/1 integers; JSON objects are TEXT.
 */
import type { Generated, Selectable } from "kysely";
import type { SpendSlotColumns } from "./slot-columns.ts";

export interface ProjectsTable {
  id: string;
  name: string;
  created_at_ms: number;
  /** The credit price: micro-credits per USD of model cost; null until set. */
  credits_per_usd_micros: number | null;
  /** The Stripe webhook signing secret (`whsec_…`); null: Stripe not connected. Never shown. */
  stripe_webhook_secret: Generated<string | null>;
  /** The Stripe secret key (`sk_…`) the service calls Stripe's API with; null: none. Never shown. */
  stripe_secret_key: Generated<string | null>;
}

export interface ApiKeysTable {
  id: string;
  project_id: string;
  key_hash: string;
  created_at_ms: number;
  revoked_at_ms: number | null;
}

/**
 * An account, with its spend counters in its own row (slot-columns.ts,
 * docs/design.md#spend-limits).
 */
export interface AccountsTable extends SpendSlotColumns {
  id: string;
  project_id: string;
  external_id: string;
  name: string;
  email: string;
  metadata: string | null;
  balance_micros: Generated<number>;
  /**
   * Unused since credits live in grants: once the unspent part of the latest non-rolling plan
   * grant, which the migration to grants turned into a grant. Kept at 0 / null.
   */
  plan_bucket_micros: Generated<number>;
  plan_bucket_account_plan_id: string | null;
  created_at_ms: number;
  updated_at_ms: number;
  /** balance.low fires when a write takes available below it (null: none). */
  low_balance_threshold_micros: number | null;
  /**
   * The account's spend limits as JSON text (src/limits/limits.ts `parseLimits`), null when it
   * has none.
   */
  spend_limits: string | null;
  /** The account's parent (docs/api.md#pools-and-members), null for a root. */
  parent_id: Generated<string | null>;
  /** Who pays its debits: itself (`own`) or its pool, the nearest account above funding itself. */
  funding: Generated<Funding>;
  /**
   * Its links in a tree: 1 for a parent, plus 1 per child. Only an account with none may take a
   * plain write (the admission rule's region, src/accounts/plain.ts).
   */
  tree_links: Generated<number>;
  /** The account's Stripe customer (`cus_…`), unique in the project; null: none. */
  stripe_customer_id: Generated<string | null>;
  /**
   * The automatic top-up's threshold (micro-credits) while it is enabled, else null
   * (docs/api.md#automatic-top-up): the plain region requires null.
   */
  auto_topup_threshold_micros: Generated<number | null>;
}

/** Who pays an account's debits (docs/api.md#pools-and-members). */
export type Funding = "own" | "parent";

export type ReservationStatus = "pending" | "confirmed" | "cancelled" | "expired";

export interface ReservationsTable {
  id: string;
  project_id: string;
  account_id: string;
  amount_micros: number;
  status: ReservationStatus;
  metadata: string;
  created_at_ms: number;
  expires_at_ms: number;
  settled_at_ms: number | null;
  actual_micros: number | null;
  transaction_id: string | null;
  /**
   * The description and metadata text of the entry that confirms the hold, written with the hold
   * by `confirmEntry` (src/reservations/confirm-debit.ts, docs/design.md#plain-writes); null for a hold
   * made before confirm texts were stored with holds.
   */
  confirm_description: string | null;
  confirm_metadata: string | null;
}

export type TransactionType = "credit" | "debit";
export type TransactionSource =
  | "add"
  | "deduct"
  | "manual"
  | "reservation"
  | "plan_grant"
  | "plan_expiry"
  | "grant_expiry"
  | "reversal"
  | "transfer"
  | "purchase";

export interface TransactionsTable {
  seq: Generated<number>;
  id: string;
  project_id: string;
  account_id: string;
  type: TransactionType;
  amount_micros: number;
  balance_after_micros: number;
  description: string;
  metadata: string;
  source: TransactionSource;
  reservation_id: string | null;
  account_plan_id: string | null;
  created_at_ms: number;
  /** A reversal: the id of the transaction it reverses (docs/api.md#reversals); else null. */
  reversal_of: string | null;
  /**
   * A debit that drew all of its amount from one grant: that grant's `seq` (every plain debit,
   * an expiry, a credit's reversal). Null for a credit, a debit of 0, and a debit drawn from
   * several grants, whose draws are `debit_draws` rows.
   */
  grant_seq: number | null;
  /** A debit booked on a pool for a member below it: the member (docs/api.md#pools-and-members). */
  on_behalf_of: string | null;
  /** Either half of a transfer: the transfer's id (docs/api.md#transfers). */
  transfer_id: string | null;
}

/**
 * A spending debit counted by an account above its spender (docs/design.md#pools-and-members):
 * one row per level above the spender when the debit was booked, with the debit's time and
 * amount, so that the level's window counters can be rebuilt and checked from rows.
 */
export interface SpendLevelsTable {
  account_id: string;
  created_at_ms: number;
  transaction_id: string;
  amount_micros: number;
}

/**
 * One row per PaymentIntent a project's Stripe events named (docs/design.md#stripe-purchases):
 * the row each event of the payment locks first. `charge_refunded`: the Charge's
 * `amount_refunded` (the currency's smallest unit) as the newest `charge.refunded` gave it, with
 * that event's `created` (seconds); `ignored_reason`: a payment event of it was ignored for a
 * reason that ignores its refunds too; `purchase_id`: once granted.
 */
export interface StripePaymentsTable {
  project_id: string;
  payment_intent_id: string;
  purchase_id: string | null;
  ignored_reason: string | null;
  charge_refunded: number | null;
  charge_refunded_at: number | null;
}

/** A Stripe Refund seen: its amount and status, the latest by `seen_at` (its event's `created`). */
export interface StripeRefundsTable {
  project_id: string;
  refund_id: string;
  payment_intent_id: string;
  amount: number;
  status: string;
  seen_at: number;
}

/** A Stripe Dispute seen: its amount and whether its funds were withdrawn and reinstated (0/1). */
export interface StripeDisputesTable {
  project_id: string;
  dispute_id: string;
  payment_intent_id: string;
  amount: number;
  withdrawn: number;
  reinstated: number;
}

/** A payment through Stripe that granted credits (docs/api.md#selling-credits-through-stripe). */
export interface PurchasesTable {
  id: string;
  project_id: string;
  account_id: string;
  payment_intent_id: string;
  checkout_session_id: string | null;
  invoice_id: string | null;
  credits_micros: number;
  /** The currency's smallest unit, as Stripe gives it. */
  amount_paid: number;
  currency: string;
  amount_refunded: number;
  credits_uncollected_micros: number;
  status: "paid" | "partially_refunded" | "refunded" | "disputed";
  /** The purchase's credit. */
  transaction_id: string;
  priority: number;
  expires_at_ms: number | null;
  created_at_ms: number;
}

/** The credits of a purchase: its credit (`restored` 0) and its restores (1). */
export interface PurchaseCreditsTable {
  purchase_id: string;
  transaction_id: string;
  credits_micros: number;
  restored: number;
}

/** An account's automatic top-up settings (docs/api.md#automatic-top-up); amounts in micro-credits. */
export interface AutoTopupsTable {
  account_id: string;
  project_id: string;
  enabled: number;
  threshold_micros: number;
  amount_micros: number;
  monthly_limit_micros: number | null;
  consecutive_failures: number;
  disabled_reason: string | null;
  updated_at_ms: number;
}

/**
 * An automatic top-up attempt: an off-session PaymentIntent whose Idempotency-Key is the
 * attempt's id. `next_try_at_ms`: when a worker may (re)try it (a lease while one works on it);
 * `first_unanswered_at_ms`: Stripe's first non-answer, from which it is retried for an hour;
 * `processing_since_ms`: when the PaymentIntent answered `processing`.
 */
export interface AutoTopupAttemptsTable {
  id: string;
  project_id: string;
  account_id: string;
  status: "pending" | "succeeded" | "failed";
  reason: string | null;
  credits_micros: number;
  amount_cents: number;
  payment_intent_id: string | null;
  purchase_id: string | null;
  created_at_ms: number;
  finished_at_ms: number | null;
  next_try_at_ms: number;
  first_unanswered_at_ms: number | null;
  processing_since_ms: number | null;
}

/** An accepted Stripe event, once by its id, with what it did. */
export interface StripeEventsTable {
  project_id: string;
  id: string;
  type: string;
  received_at_ms: number;
  deliveries: number;
  outcome: "applied" | "duplicate" | "pending" | "ignored";
  reason: string | null;
  purchase_id: string | null;
  payment_intent_id: string | null;
}

/**
 * What a debit drawn from several grants took from each, in the order drawn (`draw_index` from
 * 0): a reversal returns the credits last drawn first (docs/api.md#reversals).
 */
export interface DebitDrawsTable {
  transaction_id: string;
  draw_index: number;
  grant_seq: number;
  drawn_micros: number;
}

/**
 * A credit grant (docs/api.md#credit-grants-expiry-and-priority): every credit of an account,
 * with what is left of it. `seq` ascends in insertion order, which is ledger order within an
 * account (grants are inserted with their credit, under the account's lock). `expiry_booked` is
 * 1 once the grant's expiry has been booked; what remains of it (`credit_grant_remaining`) is then
 * what reservations held beyond `available` (spent first by those holds' confirms, removed
 * by every write as far as `available` allows).
 */
export interface CreditGrantsTable {
  seq: Generated<number>;
  id: string;
  project_id: string;
  account_id: string;
  /** The credit transaction that made the grant; null for a grant the migration to grants made of an older balance. */
  transaction_id: string | null;
  /** The assignment of a plan grant, else null. */
  account_plan_id: string | null;
  amount_micros: number;
  /** 0–100, lower is spent first. */
  priority: number;
  expires_at_ms: number | null;
  expiry_booked: Generated<number>;
  created_at_ms: number;
  /**
   * 1 once nothing remains of the grant, set by the database (a trigger on
   * `credit_grant_remaining`); the partial indexes hold the grants with 0
   * (docs/design.md#grant-indexes).
   */
  exhausted: Generated<number>;
}

/**
 * What remains of a grant, in micro-credits: one narrow row per grant, the only
 * row a debit changes besides the balance and the ledger. 0 ≤ remaining ≤ the grant's amount,
 * held by triggers: it starts at the amount and never passes it; it grows back only when a debit
 * drawn from it is reversed (docs/design.md#reversals, docs/design.md#grant-indexes).
 */
export interface CreditGrantRemainingTable {
  /** The grant's `seq`. */
  seq: number;
  remaining_micros: number;
}

export type PlanInterval = "1d" | "week" | "month";

export interface PlansTable {
  id: string;
  project_id: string;
  name: string;
  description: string;
  credits_micros: number;
  price_micros: number;
  billing_period: string;
  interval: PlanInterval;
  occurrences: number | null;
  accumulate: number;
  is_active: number;
  created_at_ms: number;
  updated_at_ms: number;
}

export type StartMode = "immediate" | "next_interval";

export interface AccountPlansTable {
  id: string;
  project_id: string;
  account_id: string;
  plan_id: string;
  active: number;
  start_mode: StartMode;
  started_at_ms: number;
  anchor_at_ms: number;
  grants_made: Generated<number>;
  next_grant_at_ms: number | null;
  expires_at_ms: number | null;
  cancelled_at_ms: number | null;
  ended_at_ms: number | null;
  end_reason: string | null;
  created_at_ms: number;
}

export interface PlanGrantsTable {
  account_plan_id: string;
  period_index: number;
  due_at_ms: number;
  transaction_id: string;
  granted_at_ms: number;
}

export interface ModelsTable {
  model_id: string;
  provider: string;
  display_name: string;
  model_type: string;
  tier: string;
  input_micros_per_m: number;
  output_micros_per_m: number;
  cached_micros_per_m: number | null;
  context_window: number;
  source: string;
  prices_as_of: string;
  updated_at_ms: number;
}

export type UsageContext = "customer" | "system";

export interface UsageRecordsTable {
  seq: Generated<number>;
  id: string;
  project_id: string;
  account_id: string | null;
  context: UsageContext;
  model_id: string;
  usage_type: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  transaction_id: string | null;
  input_micros_per_m: number;
  output_micros_per_m: number;
  cached_micros_per_m: number | null;
  cost_micro_usd: number;
  cost_pico_rem: number;
  metadata: string | null;
  created_at_ms: number;
  /** Micro-credits the record was charged (0 for a cost of 0); null without a charge. */
  credits_charged_micros: number | null;
}

export interface IdempotencyKeysTable {
  project_id: string;
  idempotency_key: string;
  request_path: string;
  request_hash: string;
  response_status: number;
  response_body: string;
  created_at_ms: number;
}

export interface WebhooksTable {
  id: string;
  project_id: string;
  url: string;
  /** JSON array of the subscribed event types. */
  events: string;
  description: string;
  secret: string;
  created_at_ms: number;
  deleted_at_ms: number | null;
  /** The lease of the one claim on this endpoint (null: not claimed; docs/design.md#fair-delivery). */
  busy_until_ms: Generated<number | null>;
  busy_token: Generated<string | null>;
  /** When an attempt last got an HTTP answer (null: never). */
  answered_at_ms: Generated<number | null>;
  /** Since when its attempts have got no answer (null once one is answered). */
  stalled_at_ms: Generated<number | null>;
  /** Since when it is paused (`isActive: false`; null while active). */
  paused_at_ms: Generated<number | null>;
}

export interface WebhookEventsTable {
  id: string;
  project_id: string;
  /** One of the event types (`EVENT_TYPES` of src/webhooks/outbox.ts). */
  type: string;
  /** The exact JSON text sent: `{id, type, createdAt, data}`. */
  payload: string;
  created_at_ms: number;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookDeliveriesTable {
  id: string;
  project_id: string;
  webhook_id: string;
  event_id: string;
  /** The event's type, as in `webhook_events.type`. */
  event_type: string;
  status: DeliveryStatus;
  attempts: Generated<number>;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at_ms: number | null;
  /** A worker's lease: the row is being attempted until then (null: not claimed). */
  locked_until_ms: number | null;
  lease_token: string | null;
  created_at_ms: number;
  delivered_at_ms: number | null;
  /** When the delivery ended, delivered or failed (null while pending): retention counts from it. */
  ended_at_ms: number | null;
}

/** A `spend_limit.reached` sent for one account, limit and window. */
export interface SpendLimitReachedTable {
  account_id: string;
  limit_key: string;
  window_start_ms: number;
  created_at_ms: number;
}

export interface DB {
  projects: ProjectsTable;
  api_keys: ApiKeysTable;
  accounts: AccountsTable;
  reservations: ReservationsTable;
  transactions: TransactionsTable;
  plans: PlansTable;
  account_plans: AccountPlansTable;
  plan_grants: PlanGrantsTable;
  credit_grants: CreditGrantsTable;
  credit_grant_remaining: CreditGrantRemainingTable;
  debit_draws: DebitDrawsTable;
  spend_levels: SpendLevelsTable;
  models: ModelsTable;
  usage_records: UsageRecordsTable;
  idempotency_keys: IdempotencyKeysTable;
  webhooks: WebhooksTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  spend_limit_reached: SpendLimitReachedTable;
  stripe_payments: StripePaymentsTable;
  stripe_refunds: StripeRefundsTable;
  stripe_disputes: StripeDisputesTable;
  purchases: PurchasesTable;
  purchase_credits: PurchaseCreditsTable;
  stripe_events: StripeEventsTable;
  auto_topups: AutoTopupsTable;
  auto_topup_attempts: AutoTopupAttemptsTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type ReservationRow = Selectable<ReservationsTable>;
export type TransactionRow = Selectable<TransactionsTable>;
export type PlanRow = Selectable<PlansTable>;
export type AccountPlanRow = Selectable<AccountPlansTable>;
/** A grant with what remains of it, as the grant queries read it (a join on `seq`). */
export type CreditGrantRow = Selectable<CreditGrantsTable> & { remaining_micros: number };
export type ModelRow = Selectable<ModelsTable>;
export type UsageRecordRow = Selectable<UsageRecordsTable>;
export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
