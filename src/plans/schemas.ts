/** zod schemas of plans and account plans (docs/api.md#endpoints, docs/api.md#plans-and-grants). */
import { z } from "@hono/zod-openapi";
import {
  ex,
  exampleAccountPlan,
  exampleCancelledAccountPlan,
  examplePlan,
} from "../http/examples.ts";
import {
  creditAmount,
  descriptionString,
  idString,
  requiringAccount,
  successResponse,
} from "../http/schemas.ts";

const interval = z.enum(["1d", "week", "month"]).openapi({ example: "month" });

export const planSchema = z
  .object({
    id: z.string().openapi({ example: ex.planId }),
    name: z.string().openapi({ example: examplePlan.name }),
    description: z.string().openapi({ example: examplePlan.description }),
    credits: z.number().openapi({ description: "Credits per grant", example: 500 }),
    price: z.number().openapi({ example: 49.99 }),
    billingPeriod: z.string().openapi({ example: "month" }),
    interval,
    occurrences: z.number().nullable().openapi({ example: null }),
    accumulate: z.boolean(),
    isActive: z.boolean(),
    createdAt: z.string().openapi({ example: ex.planCreatedAt }),
  })
  .openapi("Plan", { example: examplePlan });

export const listPlansResponse = z
  .object({ success: z.literal(true), plans: z.array(planSchema) })
  .openapi({
    example: {
      success: true,
      plans: [
        examplePlan,
        {
          id: "plan_01M6GDQ3J8K2XPB6T4W9ZRM5N1",
          name: "Starter weekly",
          description: "50 credits a week for 12 weeks; leftovers do not roll over",
          credits: 50,
          price: 4.5,
          billingPeriod: "week",
          interval: "week",
          occurrences: 12,
          accumulate: false,
          isActive: false,
          createdAt: "2026-11-03T10:03:31.412Z",
        },
      ],
    },
  });

/** The plan list takes no query parameters. */
export const listPlansQuery = z.object({});

export const createPlanBody = z
  .object({
    name: idString.openapi({ example: "Pro monthly" }),
    amount: creditAmount().openapi({
      description: "Credits granted per interval (> 0)",
      example: 500,
    }),
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
    description: descriptionString.optional().openapi({ example: examplePlan.description }),
    price: creditAmount({ allowZero: true })
      .optional()
      .openapi({ description: "What the customer pays, informative; default 0", example: 49.99 }),
    billingPeriod: idString
      .optional()
      .openapi({ description: "Informative; default the interval", example: "month" }),
  })
  .openapi("CreatePlanRequest", {
    example: {
      name: examplePlan.name,
      amount: 500,
      interval: "month",
      price: 49.99,
      description: examplePlan.description,
    },
  });

export const createPlanResponse = successResponse({ plan: planSchema }, { plan: examplePlan });

export const planIdBody = z
  .object({ planId: idString.openapi({ example: ex.planId }) })
  .openapi("PlanIdRequest", { example: { planId: ex.planId } });

export const accountPlanSchema = z
  .object({
    id: z.string().openapi({ example: ex.accountPlanId }),
    accountId: z.string().openapi({ example: ex.accountId }),
    planId: z.string().openapi({ example: ex.planId }),
    active: z.boolean(),
    startMode: z.enum(["immediate", "next_interval"]),
    startedAt: z.string().openapi({ example: ex.assignedAt }),
    expiresAt: z.string().nullable().openapi({ example: null }),
    cancelledAt: z.string().nullable().openapi({ example: null }),
    nextGrantAt: z.string().nullable().openapi({ example: ex.nextGrantAt }),
    grantsMade: z.number().openapi({ example: 1 }),
    plan: z.object({ id: z.string(), name: z.string(), credits: z.number() }),
  })
  .openapi("AccountPlan", { example: exampleAccountPlan });

export const listAccountPlansQuery = requiringAccount({});

export const listAccountPlansResponse = successResponse(
  { plans: z.array(accountPlanSchema) },
  { plans: [exampleAccountPlan] },
);

export const assignPlanBody = z
  .object({
    accountId: idString.openapi({
      description: "Internal id or externalId",
      example: ex.externalId,
    }),
    planId: idString.openapi({ example: ex.planId }),
    startMode: z
      .enum(["immediate", "next_interval"])
      .optional()
      .openapi({ description: "Default immediate", example: "immediate" }),
  })
  .openapi("AssignPlanRequest", {
    example: { accountId: ex.externalId, planId: ex.planId, startMode: "immediate" },
  });

/** `{ success: true, accountPlan }`, documented with `example` as the assignment. */
function accountPlanResponse(example: z.input<typeof accountPlanSchema>) {
  return successResponse({ accountPlan: accountPlanSchema }, { accountPlan: example });
}

export const assignPlanResponse = accountPlanResponse(exampleAccountPlan);

export const cancelAccountPlanBody = z
  .object({ accountPlanId: idString.openapi({ example: ex.accountPlanId }) })
  .openapi("CancelAccountPlanRequest", { example: { accountPlanId: ex.accountPlanId } });

export const cancelAccountPlanResponse = accountPlanResponse(exampleCancelledAccountPlan);
