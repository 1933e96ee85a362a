/**
 * zod schemas of accounts, balance views and the `balance.low` event (docs/api.md#endpoints,
 * docs/api.md#accounts, docs/api.md#event-types), and the mapper of an account row to the API's
 * Account object.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { AccountRow } from "../db/schema.ts";
import { ex, exampleAccount, exampleNewAccount } from "../http/examples.ts";
import {
  creditAmount,
  idString,
  MAX_ID_LENGTH,
  metadataSchema,
  pageQuery,
  paginationSchema,
  requiringAccount,
  shortString,
  successResponse,
} from "../http/schemas.ts";
import { looksLikeAccountId } from "../ids.ts";
import { parseJsonColumn } from "../json.ts";
import { limitsJson, spendLimitSchema, spendLimitsInput } from "../limits/limits.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";

/** Who pays an account's debits (docs/api.md#pools-and-members). */
const fundingSchema = z.enum(["own", "parent"]).openapi({
  description:
    "`own`: the account pays its debits; `parent`: its pool (the nearest account above it " +
    "that funds itself) pays them, and it holds no credits of its own",
  example: "own",
});

/** `parentId` in a request: an account of the project (internal id or externalId). */
const parentIdInput = idString.openapi({
  description: "The account above it: internal id or externalId (docs/api.md#pools-and-members)",
  example: "acme-corp",
});

/** A Stripe customer id in a request: `cus_` and its id (unique in the project, else 409). */
const stripeCustomerIdInput = idString
  .regex(/^cus_[A-Za-z0-9]+$/, { message: "must be a Stripe customer id (cus_…)" })
  .openapi({
    description: "The account's Stripe customer (`cus_…`), unique in the project",
    example: "cus_Q0abc",
  });

/** A low-balance threshold in a request: credits ≥ 0 (read as micro-credits), or null. */
const lowBalanceThreshold = creditAmount({ allowZero: true })
  .nullable()
  .openapi({
    type: ["number", "null"],
    description: "Credits ≥ 0, at most 6 decimals; null for none",
    example: 5,
  });

export const accountSchema = z
  .object({
    id: z.string().openapi({ example: ex.accountId }),
    developerId: z.string().openapi({ description: "The owning project", example: ex.projectId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    name: z.string().openapi({ example: ex.name }),
    email: z.string().openapi({ example: ex.email }),
    balance: z.number().openapi({ example: exampleAccount.balance }),
    metadata: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({ example: { ...ex.accountMetadata } }),
    lowBalanceThreshold: z.number().nullable().openapi({
      description:
        "Credits; a write that takes `available` below it fires `balance.low` (null: none)",
      example: exampleAccount.lowBalanceThreshold,
    }),
    spendLimits: z.array(spendLimitSchema).openapi({
      description: "The account's spend limits per period ([] when none)",
      example: [],
    }),
    createdAt: z.string().openapi({ example: ex.accountCreatedAt }),
    updatedAt: z.string().openapi({ example: exampleAccount.updatedAt }),
    parentId: z.string().nullable().openapi({
      description: "The account above it (docs/api.md#pools-and-members); null for a root",
      example: null,
    }),
    funding: fundingSchema,
    fundedBy: z.string().openapi({
      description: "The pool whose credits pay its debits: its own id when it funds itself",
      example: ex.accountId,
    }),
    stripeCustomerId: z
      .string()
      .nullable()
      .openapi({
        description:
          "The account's Stripe customer: its payments grant it credits " +
          "(docs/api.md#selling-credits-through-stripe); null when unset",
        example: null,
      }),
  })
  .openapi("Account", { example: exampleAccount });

/**
 * The API's Account object of a stored account; `fundedBy`: its pool's id (pool.ts
 * `poolIds`), which is its own when it funds itself.
 */
export function accountJson(row: AccountRow, fundedBy: string): WireOf<typeof accountSchema> {
  return {
    id: row.id,
    developerId: row.project_id,
    externalId: row.external_id,
    name: row.name,
    email: row.email,
    balance: fromMicros(row.balance_micros),
    metadata: parseJsonColumn(row.metadata),
    lowBalanceThreshold:
      row.low_balance_threshold_micros === null
        ? null
        : fromMicros(row.low_balance_threshold_micros),
    spendLimits: limitsJson(row.spend_limits),
    createdAt: iso(row.created_at_ms),
    updatedAt: iso(row.updated_at_ms),
    parentId: row.parent_id,
    funding: row.funding,
    fundedBy,
    stripeCustomerId: row.stripe_customer_id,
  };
}

export const createAccountBody = z
  .object({
    externalId: idString
      .refine((value) => !looksLikeAccountId(value), {
        message: "must not have the form of an internal account id (acc_ and a ULID)",
      })
      .openapi({ example: ex.externalId }),
    name: shortString.optional().openapi({ example: ex.name }),
    email: z.email().max(MAX_ID_LENGTH).optional().openapi({ example: ex.email }),
    metadata: metadataSchema.optional().openapi({ example: { ...ex.accountMetadata } }),
    lowBalanceThreshold: lowBalanceThreshold.optional(),
    spendLimits: spendLimitsInput.optional(),
    parentId: parentIdInput.optional(),
    funding: fundingSchema.optional().openapi({
      description: "Default: `parent` with a `parentId`, else `own`",
    }),
    stripeCustomerId: stripeCustomerIdInput.optional(),
  })
  .openapi("CreateAccountRequest", {
    example: {
      externalId: ex.externalId,
      name: ex.name,
      email: ex.email,
      metadata: { ...ex.accountMetadata },
    },
  });

/**
 * `POST /v1/accounts/update`: the account (internal id or externalId) and the fields to change;
 * a field left out keeps its value, `metadata` is replaced whole, and `lowBalanceThreshold: null`
 * removes the threshold.
 */
export const updateAccountBody = z
  .object({
    accountId: idString.openapi({
      description: "Internal id or externalId",
      example: ex.externalId,
    }),
    name: shortString.optional().openapi({ example: ex.name }),
    email: z.email().max(MAX_ID_LENGTH).optional().openapi({ example: ex.email }),
    metadata: metadataSchema.optional().openapi({ example: { ...ex.accountMetadata } }),
    lowBalanceThreshold: lowBalanceThreshold.optional(),
    spendLimits: spendLimitsInput.optional(),
    parentId: parentIdInput
      .nullable()
      .optional()
      .openapi({
        type: ["string", "null"],
        description: "Moves the account (with everything below it) under another; null: a root",
      }),
    funding: fundingSchema.optional(),
    stripeCustomerId: stripeCustomerIdInput
      .nullable()
      .optional()
      .openapi({ type: ["string", "null"], description: "null removes it" }),
  })
  .openapi("UpdateAccountRequest", {
    example: { accountId: ex.externalId, lowBalanceThreshold: 5 },
  });

/** `{ success: true, account }`, documented with `example` as the account. */
function accountResponse(example: z.input<typeof accountSchema>) {
  return successResponse({ account: accountSchema }, { account: example });
}

export const updateAccountResponse = accountResponse(exampleAccount);

export const createAccountResponse = accountResponse(exampleNewAccount);

export const listAccountsQuery = z.object({
  search: idString.optional().openapi({
    description:
      "Only accounts whose externalId or name contains this text (ASCII letters in any case)",
    example: "acme",
  }),
  parentId: idString.optional().openapi({
    description: "Only the children of this account (internal id or externalId)",
    example: "acme-corp",
  }),
  ...pageQuery(50, 500),
});

export const listAccountsResponse = z
  .object({
    accounts: z.array(accountSchema),
    pagination: paginationSchema.optional(),
  })
  .openapi({
    example: {
      accounts: [exampleAccount],
      pagination: { limit: 50, offset: 0, totalCount: 1, hasMore: false },
    },
  });

/** `accountId` (internal id or externalId) or `externalId`: one is required. */
export const accountRefQuery = requiringAccount({});

export const balanceSchema = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    balance: z.number().openapi({ description: "Total credits", example: 22.79 }),
    reserved: z
      .number()
      .openapi({ description: "Credits held by pending reservations", example: 4.8 }),
    available: z.number().openapi({ description: "balance − reserved", example: 17.99 }),
    fundedBy: z.string().openapi({
      description:
        "The pool whose figures these are: the account's own id when it funds itself " +
        "(docs/api.md#pools-and-members)",
      example: ex.accountId,
    }),
  })
  .openapi("Balance", {
    example: {
      accountId: ex.accountId,
      externalId: ex.externalId,
      balance: 22.79,
      reserved: 4.8,
      available: 17.99,
      fundedBy: ex.accountId,
    },
  });

/**
 * The `data` of a `balance.low` event: the account's balances (credits) just after the write
 * that took `available` below its threshold, and the debit that did it (null: a reservation).
 */
export const balanceLowData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    balance: z.number().openapi({ description: "Credits after the write", example: 6.5 }),
    reserved: z
      .number()
      .openapi({ description: "Credits held by pending reservations", example: 2 }),
    available: z.number().openapi({ description: "balance − reserved", example: 4.5 }),
    threshold: z.number().openapi({ description: "The account's lowBalanceThreshold", example: 5 }),
    transactionId: z.string().nullable().openapi({
      description: "The debit that crossed the threshold; null when a reservation did",
      example: ex.deductTxnId,
    }),
    onBehalfOf: z
      .string()
      .optional()
      .openapi({
        description:
          "When a member's write crossed its pool's threshold: the member " +
          "(docs/api.md#pools-and-members)",
        example: "acc_01J9ZB4M2N6P8Q0R2S4T6V8W0X",
      }),
  })
  .openapi("BalanceLowData");
