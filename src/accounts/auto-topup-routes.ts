/**
 * The automatic top-up routes (docs/api.md#automatic-top-up): `POST /v1/accounts/auto-topup`
 * sets an account's top-up, `GET /v1/accounts/auto-topup` reads it with its last attempt. Part
 * of the account routes; the attempts themselves run in src/jobs/auto-topup.ts.
 */
import { z } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { ex } from "../http/examples.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import {
  creditAmount,
  idString,
  pageQuery,
  paginationSchema,
  requiringAccount,
} from "../http/schemas.ts";
import { setAutoTopup } from "./auto-topup-settings.ts";
import {
  autoTopupAttemptSchema,
  autoTopupJson,
  autoTopupSchema,
  listAttempts,
} from "./auto-topup-view.ts";
import { accountRefQuery } from "./schemas.ts";
import { resolveAccount } from "./service.ts";

export const setAutoTopupBody = z
  .strictObject({
    accountId: idString.openapi({
      description: "Internal id or externalId",
      example: ex.externalId,
    }),
    enabled: z.boolean(),
    threshold: creditAmount({ allowZero: true }).openapi({
      description: "Credits ≥ 0: a write taking `available` below it queues an attempt",
      example: 100,
    }),
    amount: creditAmount().openapi({
      description: "Credits bought per attempt (> 0; 50 cents to $999,999.99 at the credit price)",
      example: 500,
    }),
    monthlyLimit: creditAmount()
      .nullable()
      .optional()
      .openapi({
        type: ["number", "null"],
        description: "Credits per UTC month (> 0); null or left out: none",
        example: 2000,
      }),
  })
  .openapi("SetAutoTopupRequest", {
    example: {
      accountId: ex.externalId,
      enabled: true,
      threshold: 100,
      amount: 500,
      monthlyLimit: 2000,
    },
  });

const autoTopupResponse = z
  .object({ success: z.literal(true), autoTopup: autoTopupSchema.nullable() })
  .openapi("AutoTopupResponse", {
    example: {
      success: true,
      autoTopup: {
        enabled: true,
        threshold: 100,
        amount: 500,
        monthlyLimit: 2000,
        toppedUpThisMonth: 500,
        consecutiveFailures: 0,
        disabledReason: null,
        lastAttempt: {
          id: "atu_01M7YKB3F8Q2W6E4R0T9Y1U3I5",
          status: "succeeded",
          reason: null,
          credits: 500,
          amountCents: 500,
          paymentIntentId: "pi_3Q0abc",
          createdAt: ex.accountCreatedAt,
          finishedAt: ex.accountCreatedAt,
        },
      },
    },
  });

const attemptsQuery = requiringAccount(pageQuery(20, 200));

const attemptsResponse = z
  .object({
    success: z.literal(true),
    attempts: z.array(autoTopupAttemptSchema),
    pagination: paginationSchema,
  })
  .openapi("AutoTopupAttemptList", {
    example: {
      success: true,
      attempts: [
        {
          id: "atu_01M7YKB3F8Q2W6E4R0T9Y1U3I5",
          status: "failed",
          reason: "card_declined",
          credits: 500,
          amountCents: 500,
          paymentIntentId: null,
          createdAt: ex.accountCreatedAt,
          finishedAt: ex.accountCreatedAt,
        },
      ],
      pagination: { limit: 20, offset: 0, totalCount: 1, hasMore: false },
    },
  });

/** The automatic top-up routes. */
export const autoTopupRoutes = resourceRoutes("Accounts", (route) => ({
  set: route.post("/v1/accounts/auto-topup", "Set an account's automatic top-up", {
    operationId: "setAutoTopup",
    description:
      "Sets the account's automatic top-up: when a write takes its `available` below " +
      "`threshold`, an off-session Stripe PaymentIntent buys `amount` credits with the " +
      "customer's default payment method, at most one attempt at a time and at most " +
      "`monthlyLimit` credits per UTC month. Needs the project's Stripe secret key and credit " +
      "price and the account's `stripeCustomerId` to enable it (409 `STRIPE_NOT_CONFIGURED`).",
    body: setAutoTopupBody,
    ok: autoTopupResponse,
    errors: ["ACCOUNT_NOT_FOUND", "FUNDED_BY_PARENT", "STRIPE_NOT_CONFIGURED"],
  }),
  attempts: route.get("/v1/accounts/auto-topup/attempts", "An account's top-up attempts", {
    operationId: "listAutoTopupAttempts",
    description:
      "The account's automatic top-up attempts, newest first, each with its status, reason, " +
      "credits, USD cents and PaymentIntent (beyond `lastAttempt` of the settings).",
    query: attemptsQuery,
    ok: attemptsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
  get: route.get("/v1/accounts/auto-topup", "An account's automatic top-up", {
    operationId: "getAutoTopup",
    description:
      "The account's automatic top-up with this month's total and its last attempt " +
      "(`autoTopup: null` before any was set).",
    query: accountRefQuery,
    ok: autoTopupResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
}));

/** Registers the automatic top-up routes. */
export function registerAutoTopupRoutes(app: App, deps: AppDeps): void {
  writeRoute(app, deps, autoTopupRoutes.set, async ({ trx, nowMs, body, projectId, reply }) => {
    const account = await setAutoTopup(
      trx,
      projectId,
      {
        accountRef: body.accountId,
        enabled: body.enabled,
        thresholdMicros: body.threshold,
        amountMicros: body.amount,
        monthlyLimitMicros: body.monthlyLimit,
      },
      nowMs,
    );
    return reply({ success: true, autoTopup: await autoTopupJson(trx, account.id, nowMs) });
  });
  app.openapi(autoTopupRoutes.attempts, async (c) => {
    const q = c.req.valid("query");
    const account = await resolveAccount(deps.db.read, c.get("projectId"), q);
    const { rows, pagination } = await paged(q, (page) =>
      listAttempts(deps.db.read, account.id, page),
    );
    return ok(c, autoTopupRoutes.attempts, { success: true, attempts: rows, pagination });
  });
  const route = autoTopupRoutes.get;
  app.openapi(route, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    const autoTopup = await autoTopupJson(deps.db.read, account.id, deps.clock());
    return ok(c, route, { success: true, autoTopup });
  });
}
