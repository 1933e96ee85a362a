/**
 * zod schemas of plans, account plans and the `plan.granted` event (docs/api.md#endpoints,
 * docs/api.md#plans-and-grants, docs/api.md#event-types), and the mappers of stored plans and
 * assignments to the API's objects.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { AccountPlanRow, PlanRow } from "../db/schema.ts";
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
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";

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

/** The API's Plan object (docs/api.md#endpoints plus the creation fields). */
export function planJson(row: PlanRow): WireOf<typeof planSchema> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    credits: fromMicros(row.credits_micros),
    price: fromMicros(row.price_micros),
    billingPeriod: row.billing_period,
    interval: row.interval,
    occurrences: row.occurrences,
    accumulate: row.accumulate === 1,
    isActive: row.is_active === 1,
    createdAt: iso(row.created_at_ms),
  };
}

/** The API's account plan object with its embedded plan summary. */
export function accountPlanJson(
  ap: AccountPlanRow,
  plan: Pick<PlanRow, "id" | "name" | "credits_micros">,
  nowMs?: number,
): WireOf<typeof accountPlanSchema> {
  // Past its expiresAt an assignment is over, even before the grant job has recorded it.
  const over = nowMs !== undefined && ap.expires_at_ms !== null && ap.expires_at_ms <= nowMs;
  const at = (ms: number | null) => (ms === null ? null : iso(ms));
  return {
    id: ap.id,
    accountId: ap.account_id,
    planId: ap.plan_id,
    active: ap.active === 1 && !over,
    startMode: ap.start_mode,
    startedAt: iso(ap.started_at_ms),
    expiresAt: at(ap.expires_at_ms),
    cancelledAt: at(ap.cancelled_at_ms),
    nextGrantAt: at(ap.next_grant_at_ms),
    grantsMade: ap.grants_made,
    plan: { id: plan.id, name: plan.name, credits: fromMicros(plan.credits_micros) },
  };
}

/**
 * The `data` of a `plan.granted` event: one period of an assignment granted, as a credit
 * (docs/api.md#plans-and-grants), and the balance after it, in credits.
 */
export const planGrantedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    accountPlanId: z.string().openapi({ example: exampleAccountPlan.id }),
    planId: z.string().openapi({ example: ex.planId }),
    transactionId: z.string().openapi({ description: "The grant's credit", example: ex.addTxnId }),
    amount: z.number().openapi({ description: "Credits granted", example: 500 }),
    balance: z.number().openapi({ description: "Credits after the grant", example: 517.29 }),
    periodStart: z.string().openapi({
      description: "The start of the granted period",
      example: "2026-12-01T00:00:00.000Z",
    }),
  })
  .openapi("PlanGrantedData");
