/** Routes of docs/api.md#endpoints, docs/api.md#plans-and-grants: plans, archive/activate, and account plans. */
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import {
  assignPlanBody,
  assignPlanResponse,
  cancelAccountPlanBody,
  cancelAccountPlanResponse,
  createPlanBody,
  createPlanResponse,
  listAccountPlansQuery,
  listAccountPlansResponse,
  listPlansQuery,
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

const route = resourceRoutes("Plans");

const listRoute = route.get("/v1/plans", "List the project's plans", {
  query: listPlansQuery,
  ok: listPlansResponse,
});

const createPlanRoute = route.post("/v1/plans/create", "Create a recurring credit plan", {
  body: createPlanBody,
  ok: createPlanResponse,
});

function planStateRoute<const P extends string>(path: P, summary: string) {
  return route.post(path, summary, {
    body: planIdBody,
    ok: createPlanResponse,
    errors: ["PLAN_NOT_FOUND"],
  });
}

const archiveRoute = planStateRoute("/v1/plans/archive", "Archive a plan (isActive false)");
const activateRoute = planStateRoute("/v1/plans/activate", "Re-activate an archived plan");

const listAssignedRoute = route.get(
  "/v1/accounts/plans",
  "List an account's plan assignments, active and historical",
  {
    query: listAccountPlansQuery,
    ok: listAccountPlansResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  },
);

const assignRoute = route.post(
  "/v1/accounts/plans/assign",
  "Assign a plan to an account (replaces its active plan)",
  {
    body: assignPlanBody,
    ok: assignPlanResponse,
    errors: ["ACCOUNT_NOT_FOUND", "PLAN_NOT_FOUND", "PLAN_INACTIVE", "BALANCE_LIMIT_EXCEEDED"],
  },
);

const cancelRoute = route.post(
  "/v1/accounts/plans/cancel",
  "Cancel an active assignment (granted credits stay)",
  {
    body: cancelAccountPlanBody,
    ok: cancelAccountPlanResponse,
    errors: ["ACCOUNT_PLAN_NOT_FOUND", "ACCOUNT_PLAN_NOT_ACTIVE"],
  },
);

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
