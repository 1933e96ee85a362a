/** zod schemas of accounts and balances (spec §2 Account, Balance view; §4.1). */
import { z } from "@hono/zod-openapi";
import {
  idString,
  MAX_ID_LENGTH,
  metadataSchema,
  pageQuery,
  paginationSchema,
} from "../http/schemas.ts";

export const accountSchema = z
  .object({
    id: z.string().openapi({ example: "acc_01JD7Y5Z8K4Q2W3E4R5T6Y7U8I" }),
    developerId: z.string().openapi({ description: "The owning project" }),
    externalId: z.string().openapi({ example: "user_42" }),
    name: z.string(),
    email: z.string(),
    balance: z.number(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Account");

export const createAccountBody = z
  .object({
    externalId: idString.openapi({ example: "user_42" }),
    name: z.string().max(MAX_ID_LENGTH).optional().openapi({ example: "Ada Lovelace" }),
    email: z.email().max(MAX_ID_LENGTH).optional().openapi({ example: "ada@example.com" }),
    metadata: metadataSchema.optional(),
  })
  .openapi("CreateAccountRequest");

export const createAccountResponse = z.object({
  success: z.literal(true),
  account: accountSchema,
});

export const listAccountsQuery = z.object(pageQuery(50, 500));

export const listAccountsResponse = z.object({
  accounts: z.array(accountSchema),
  pagination: paginationSchema.optional(),
});

/** `accountId` (internal id or externalId) or `externalId`: one is required. */
export const accountRefQuery = z
  .object({
    accountId: idString.optional().openapi({ description: "Internal id or externalId" }),
    externalId: idString.optional(),
  })
  .refine((q) => q.accountId !== undefined || q.externalId !== undefined, {
    message: "accountId or externalId is required",
    path: ["accountId"],
  });

export const balanceSchema = z
  .object({
    accountId: z.string(),
    externalId: z.string(),
    balance: z.number().openapi({ description: "Total credits" }),
    reserved: z.number().openapi({ description: "Credits held by pending reservations" }),
    available: z.number().openapi({ description: "balance − reserved" }),
  })
  .openapi("Balance");
