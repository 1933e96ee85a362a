/** Routes of docs/api.md#endpoints, docs/api.md#plans-and-grants: plans, archive/activate, and account plans. */
import { createRoute } from "@hono/zod-openapi";
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok } from "../http/respond.ts";
import { errorResponses, jsonBody, okJson } from "../http/schemas.ts";
import {
  assignPlanBody,
  assignPlanResponse,
  cancelAccountPlanBody,
  cancelAccountPlanResponse,
  createPlanBody,
  createPlanResponse,
  listAccountPlansQuery,
  listAccountPlansResponse,
  listPlansResponse,
  planIdBody,
} from "./schemas.ts";
import {
  accountPlanJson,
  assignPlan,
  cancelAssignment,
  createPlan,
  listAccountPlans,
  listPlans,
  planJson,
  setPlanActive,
} from "./service.ts";

const tags = ["Plans"];

const listRoute = createRoute({
  method: "get",
  path: "/v1/plans",
  tags,
  summary: "List the project's plans",
  responses: { ...okJson(listPlansResponse, "Plans, oldest first"), ...errorResponses() },
});

const createPlanRoute = createRoute({
  method: "post",
  path: "/v1/plans/create",
  tags,
  summary: "Create a recurring credit plan",
  request: { body: jsonBody(createPlanBody) },
  responses: {
    ...okJson(createPlanResponse, "The new plan"),
    ...errorResponses("IDEMPOTENCY_KEY_REUSED"),
  },
});

function planStateRoute(path: string, summary: string) {
  return createRoute({
    method: "post",
    path,
    tags,
    summary,
    request: { body: jsonBody(planIdBody) },
    responses: {
      ...okJson(createPlanResponse, "The plan"),
      ...errorResponses("PLAN_NOT_FOUND", "IDEMPOTENCY_KEY_REUSED"),
    },
  });
}

const archiveRoute = planStateRoute("/v1/plans/archive", "Archive a plan (isActive false)");
const activateRoute = planStateRoute("/v1/plans/activate", "Re-activate an archived plan");

const listAssignedRoute = createRoute({
  method: "get",
  path: "/v1/accounts/plans",
  tags,
  summary: "List an account's plan assignments, active and historical",
  request: { query: listAccountPlansQuery },
  responses: {
    ...okJson(listAccountPlansResponse, "Assignments, newest first"),
    ...errorResponses("ACCOUNT_NOT_FOUND"),
  },
});

const assignRoute = createRoute({
  method: "post",
  path: "/v1/accounts/plans/assign",
  tags,
  summary: "Assign a plan to an account (replaces its active plan)",
  request: { body: jsonBody(assignPlanBody) },
  responses: {
    ...okJson(assignPlanResponse, "The new assignment"),
    ...errorResponses(
      "ACCOUNT_NOT_FOUND",
      "PLAN_NOT_FOUND",
      "PLAN_INACTIVE",
      "BALANCE_LIMIT_EXCEEDED",
      "IDEMPOTENCY_KEY_REUSED",
    ),
  },
});

const cancelRoute = createRoute({
  method: "post",
  path: "/v1/accounts/plans/cancel",
  tags,
  summary: "Cancel an active assignment (granted credits stay)",
  request: { body: jsonBody(cancelAccountPlanBody) },
  responses: {
    ...okJson(cancelAccountPlanResponse, "The cancelled assignment"),
    ...errorResponses(
      "ACCOUNT_PLAN_NOT_FOUND",
      "ACCOUNT_PLAN_NOT_ACTIVE",
      "IDEMPOTENCY_KEY_REUSED",
    ),
  },
});

/** The plan and assignment routes. */
export const planRoutes = {
  list: listRoute,
  create: createPlanRoute,
  archive: archiveRoute,
  activate: activateRoute,
  listAssigned: listAssignedRoute,
  assign: assignRoute,
  cancel: cancelRoute,
};

export function registerPlanRoutes(app: App, deps: AppDeps): void {
  app.openapi(listRoute, async (c) => {
    const rows = await listPlans(deps.db.read, c.get("projectId"));
    return ok(c, listRoute, { success: true, plans: rows.map(planJson) });
  });

  app.openapi(createPlanRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, createPlanRoute, async (trx, nowMs, reply) => {
      const row = await createPlan(
        trx,
        projectId,
        {
          name: body.name,
          creditsMicros: body.amount,
          interval: body.interval,
          occurrences: body.occurrences ?? null,
          accumulate: body.accumulate ?? true,
          isActive: body.markAsActive ?? true,
          description: body.description ?? "",
          priceMicros: body.price ?? 0,
          billingPeriod: body.billingPeriod ?? body.interval,
        },
        nowMs,
      );
      return reply({ success: true, plan: planJson(row) });
    });
  });

  for (const [route, active] of [
    [archiveRoute, false],
    [activateRoute, true],
  ] as const) {
    app.openapi(route, async (c) => {
      const body = c.req.valid("json");
      const projectId = c.get("projectId");
      return runWrite(c, deps.queue, route, async (trx, nowMs, reply) => {
        const row = await setPlanActive(trx, projectId, body.planId, active, nowMs);
        return reply({ success: true, plan: planJson(row) });
      });
    });
  }

  app.openapi(listAssignedRoute, async (c) => {
    const q = c.req.valid("query");
    const account = await resolveAccount(deps.db.read, c.get("projectId"), q);
    const rows = await listAccountPlans(deps.db.read, account.id);
    const nowMs = deps.clock();
    const plans = rows.map((r) =>
      accountPlanJson(
        r,
        { id: r.plan_id, name: r.plan_name, credits_micros: r.plan_credits_micros },
        nowMs,
      ),
    );
    return ok(c, listAssignedRoute, { success: true, plans });
  });

  app.openapi(assignRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, assignRoute, async (trx, nowMs, reply) => {
      const { ap, plan } = await assignPlan(
        trx,
        projectId,
        {
          accountRef: body.accountId,
          planId: body.planId,
          startMode: body.startMode ?? "immediate",
        },
        nowMs,
      );
      return reply({ success: true, accountPlan: accountPlanJson(ap, plan) });
    });
  });

  app.openapi(cancelRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, cancelRoute, async (trx, nowMs, reply) => {
      const { ap, plan } = await cancelAssignment(trx, projectId, body.accountPlanId, nowMs);
      return reply({ success: true, accountPlan: accountPlanJson(ap, plan) });
    });
  });
}
