/** zod schemas of the grant list (docs/api.md#grant-list). */
import { z } from "@hono/zod-openapi";
import { ex } from "../http/examples.ts";
import { pageQuery, paginationSchema, queryBoolean, requiringAccount } from "../http/schemas.ts";

export const grantSchema = z
  .object({
    id: z.string().openapi({ example: "grt_01JD7Q2W8R5T3V9X1Z4B6C8E0G" }),
    accountId: z.string().openapi({ example: ex.accountId }),
    transactionId: z.string().nullable().openapi({
      description: "The credit that made the grant (null for credits booked before grants existed)",
      example: ex.addTxnId,
    }),
    amount: z.number().openapi({ description: "Credits granted", example: 25.5 }),
    remaining: z.number().openapi({ description: "Credits not yet spent", example: 18.25 }),
    priority: z.number().int().openapi({ description: "0-100, lower is spent first", example: 50 }),
    expiresAt: z
      .string()
      .nullable()
      .openapi({ description: "null: never expires", example: "2027-12-31T23:59:59.000Z" }),
    createdAt: z.string().openapi({ example: "2026-11-21T08:20:11.412Z" }),
    status: z.enum(["active", "expired", "spent"]).openapi({
      description:
        "`expired` once past expiresAt; else `active` while something remains, else `spent`",
      example: "active",
    }),
  })
  .openapi("Grant");

export const listGrantsQuery = requiringAccount({
  activeOnly: queryBoolean
    .optional()
    .openapi({ description: "Only active grants", example: "false" }),
  ...pageQuery(100, 1000),
});

const exampleGrant = {
  id: "grt_01JD7Q2W8R5T3V9X1Z4B6C8E0G",
  accountId: ex.accountId,
  transactionId: ex.addTxnId,
  amount: 25.5,
  remaining: 18.25,
  priority: 50,
  expiresAt: "2027-12-31T23:59:59.000Z",
  createdAt: "2026-11-21T08:20:11.412Z",
  status: "active" as const,
};

export const listGrantsResponse = z
  .object({
    success: z.literal(true),
    grants: z.array(grantSchema),
    pagination: paginationSchema,
  })
  .openapi({
    example: {
      success: true,
      grants: [exampleGrant],
      pagination: { limit: 100, offset: 0, totalCount: 1, hasMore: false },
    },
  });
