/** zod schemas of plans and account plans (spec §4.3; contract §8). */
import { z } from "@hono/zod-openapi";
import { creditAmount, descriptionString, idString } from "../http/schemas.ts";

const interval = z.enum(["1d", "week", "month"]);

export const planSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    credits: z.number(),
    price: z.number(),
    billingPeriod: z.string(),
    interval,
    occurrences: z.number().nullable(),
    accumulate: z.boolean(),
    isActive: z.boolean(),
    createdAt: z.string(),
  })
  .openapi("Plan");

export const listPlansResponse = z.object({ success: z.literal(true), plans: z.array(planSchema) });

export const createPlanBody = z
  .object({
    name: idString.openapi({ example: "Pro monthly" }),
    amount: creditAmount().openapi({ description: "Credits granted per interval (> 0)" }),
    interval,
    occurrences: z
      .number()
      .int()
      .positive()
      .max(100_000)
      .nullable()
      .optional()
      .openapi({ description: "Total number of grants; null = unlimited (default)" }),
    accumulate: z.boolean().optional().openapi({ description: "Default true" }),
    markAsActive: z.boolean().optional().openapi({ description: "Default true" }),
    description: descriptionString.optional(),
    price: z
      .number()
      .min(0)
      .max(1_000_000_000)
      .refine((p) => /^\d+(\.\d{1,6})?$/.test(String(p)), "at most 6 decimal places")
      .optional(),
    billingPeriod: idString.optional(),
  })
  .openapi("CreatePlanRequest");

export const createPlanResponse = z.object({ success: z.literal(true), plan: planSchema });

export const planIdBody = z.object({ planId: idString }).openapi("PlanIdRequest");

export const accountPlanSchema = z
  .object({
    id: z.string(),
    accountId: z.string(),
    planId: z.string(),
    active: z.boolean(),
    startMode: z.enum(["immediate", "next_interval"]),
    startedAt: z.string(),
    expiresAt: z.string().nullable(),
    cancelledAt: z.string().nullable(),
    nextGrantAt: z.string().nullable(),
    grantsMade: z.number(),
    plan: z.object({ id: z.string(), name: z.string(), credits: z.number() }),
  })
  .openapi("AccountPlan");

export const listAccountPlansQuery = z.object({
  accountId: idString.optional().openapi({ description: "Internal id or externalId" }),
  externalId: idString.optional(),
});

export const listAccountPlansResponse = z.object({
  success: z.literal(true),
  plans: z.array(accountPlanSchema),
});

export const assignPlanBody = z
  .object({
    accountId: idString.openapi({ description: "Internal id or externalId" }),
    planId: idString,
    startMode: z
      .enum(["immediate", "next_interval"])
      .optional()
      .openapi({ description: "Default immediate" }),
  })
  .openapi("AssignPlanRequest");

export const assignPlanResponse = z.object({
  success: z.literal(true),
  accountPlan: accountPlanSchema,
});

export const cancelAccountPlanBody = z
  .object({ accountPlanId: idString })
  .openapi("CancelAccountPlanRequest");

export const cancelAccountPlanResponse = z.object({
  success: z.literal(true),
  accountPlan: accountPlanSchema,
});
