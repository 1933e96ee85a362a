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
  })
  .openapi("Account", { example: exampleAccount });

/** The API's Account object of a stored account. */
export function accountJson(row: AccountRow): WireOf<typeof accountSchema> {
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
  })
  .openapi("Balance", {
    example: {
      accountId: ex.accountId,
      externalId: ex.externalId,
      balance: 22.79,
      reserved: 4.8,
      available: 17.99,
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
  })
  .openapi("BalanceLowData");
