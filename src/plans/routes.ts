/** Routes of docs/api.md#endpoints, docs/api.md#plans-and-grants: plans, archive/activate, and account plans. */

import type { RouteHandler } from "@hono/zod-openapi";
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { type WriteInput, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { type OperationId, resourceRoutes } from "../http/routes.ts";
import {
  accountPlanJson,
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
  planJson,
} from "./schemas.ts";
import {
  assignPlan,
  cancelAssignment,
  createPlan,
  listAccountPlans,
  listPlans,
  setPlanActive,
} from "./service.ts";

/** The routes of plans themselves: list, create, archive, activate. */
const planOnlyRoutes = resourceRoutes("Plans", (route) => {
  /** A route that archives or activates a plan. */
  const stateRoute = <const P extends string>(
    path: P,
    summary: string,
    operation: { operationId: OperationId; description: string },
  ) =>
    route.post(path, summary, {
      ...operation,
      body: planIdBody,
      ok: createPlanResponse,
      errors: ["PLAN_NOT_FOUND"],
    });
  return {
    list: route.get("/v1/plans", "List the project's plans", {
      operationId: "listPlans",
      description: "Lists the project's plans, oldest first, archived ones included.",
      query: listPlansQuery,
      ok: listPlansResponse,
    }),
    create: route.post("/v1/plans/create", "Create a recurring credit plan", {
      operationId: "createPlan",
      description:
        "Creates a plan that grants `amount` credits every `interval` (`1d`, `week` or " +
        "`month`), `occurrences` times (null: until cancelled). With `accumulate: false` the " +
        "credits of a period expire when the next is granted. Plans are never deleted.",
      body: createPlanBody,
      ok: createPlanResponse,
    }),
    archive: stateRoute("/v1/plans/archive", "Archive a plan (isActive false)", {
      operationId: "archivePlan",
      description:
        "Sets `isActive` to false: the plan can no longer be assigned (409 `PLAN_INACTIVE`); " +
        "its running assignments keep granting.",
    }),
    activate: stateRoute("/v1/plans/activate", "Re-activate an archived plan", {
      operationId: "activatePlan",
      description: "Sets `isActive` back to true, so the plan can be assigned again.",
    }),
  };
});

/** The routes of an account's plan assignments: list, assign, cancel. */
const assignmentRoutes = resourceRoutes("Plans", (route) => ({
  listAssigned: route.get(
    "/v1/accounts/plans",
    "List an account's plan assignments, active and historical",
    {
      operationId: "listAccountPlans",
      description:
        "Lists every assignment of one account, newest first, with its schedule " +
        "(`nextGrantAt`, `grantsMade`, `expiresAt`, `cancelledAt`) and its plan.",
      query: listAccountPlansQuery,
      ok: listAccountPlansResponse,
      errors: ["ACCOUNT_NOT_FOUND"],
    },
  ),
  assign: route.post(
    "/v1/accounts/plans/assign",
    "Assign a plan to an account (replaces its active plan)",
    {
      operationId: "assignPlan",
      description:
        "Starts the plan's schedule of grants for the account, replacing its active " +
        "assignment. `startMode: immediate` (the default) grants the first period at once; " +
        "`next_interval` grants nothing now and carries the replaced schedule over.",
      body: assignPlanBody,
      ok: assignPlanResponse,
      errors: [
        "ACCOUNT_NOT_FOUND",
        "PLAN_NOT_FOUND",
        "PLAN_INACTIVE",
        "BALANCE_LIMIT_EXCEEDED",
        "FUNDED_BY_PARENT",
      ],
    },
  ),
  cancel: route.post(
    "/v1/accounts/plans/cancel",
    "Cancel an active assignment (granted credits stay)",
    {
      operationId: "cancelAccountPlan",
      description:
        "Ends an active assignment: periods already due are granted first, and credits " +
        "already granted stay. 409 `ACCOUNT_PLAN_NOT_ACTIVE` when it is no longer active.",
      body: cancelAccountPlanBody,
      ok: cancelAccountPlanResponse,
      errors: ["ACCOUNT_PLAN_NOT_FOUND", "ACCOUNT_PLAN_NOT_ACTIVE"],
    },
  ),
}));

/** The plan and assignment routes. */
export const planRoutes = { ...planOnlyRoutes, ...assignmentRoutes };

type Routes = typeof planRoutes;

/** `GET /v1/plans`: the project's plans. */
export function listPlansHandler(deps: AppDeps): RouteHandler<Routes["list"], AppEnv> {
  return async (c) => {
    const rows = await listPlans(deps.db.read, c.get("projectId"));
    return ok(c, planRoutes.list, { success: true, plans: rows.map(planJson) });
  };
}

/** The write unit of `POST /v1/plans/create`, the body's defaults applied. */
export async function createPlanUnit(input: WriteInput<Routes["create"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
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
}

/** The write unit of `POST /v1/plans/archive` (`active` false) or `/v1/plans/activate` (true). */
export function setPlanActiveUnit(active: boolean) {
  return async (input: WriteInput<Routes["archive"] | Routes["activate"]>) => {
    const { trx, nowMs, body, projectId, reply } = input;
    const row = await setPlanActive(trx, projectId, body.planId, active, nowMs);
    return reply({ success: true, plan: planJson(row) });
  };
}

/** `GET /v1/accounts/plans`: an account's plan assignments. */
export function listAccountPlansHandler(
  deps: AppDeps,
): RouteHandler<Routes["listAssigned"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const account = await resolveAccount(deps.db.read, c.get("projectId"), q);
    const rows = await listAccountPlans(deps.db.read, account.id);
    const nowMs = deps.clock();
    const plans = rows.map((row) =>
      accountPlanJson(
        row,
        { id: row.plan_id, name: row.plan_name, credits_micros: row.plan_credits_micros },
        nowMs,
      ),
    );
    return ok(c, planRoutes.listAssigned, { success: true, plans });
  };
}

/** The write unit of `POST /v1/accounts/plans/assign`. */
export async function assignPlanUnit(input: WriteInput<Routes["assign"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const { ap, plan } = await assignPlan(
    trx,
    projectId,
    { accountRef: body.accountId, planId: body.planId, startMode: body.startMode ?? "immediate" },
    nowMs,
  );
  return reply({ success: true, accountPlan: accountPlanJson(ap, plan) });
}

/** The write unit of `POST /v1/accounts/plans/cancel`. */
export async function cancelAccountPlanUnit(input: WriteInput<Routes["cancel"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const { ap, plan } = await cancelAssignment(trx, projectId, body.accountPlanId, nowMs);
  return reply({ success: true, accountPlan: accountPlanJson(ap, plan) });
}

/** Registers the plan and assignment routes' handlers on `app`. */
export function registerPlanRoutes(app: App, deps: AppDeps): void {
  const r = planRoutes;
  app.openapi(r.list, listPlansHandler(deps));
  writeRoute(app, deps, r.create, createPlanUnit);
  writeRoute(app, deps, r.archive, setPlanActiveUnit(false));
  writeRoute(app, deps, r.activate, setPlanActiveUnit(true));
  app.openapi(r.listAssigned, listAccountPlansHandler(deps));
  writeRoute(app, deps, r.assign, assignPlanUnit);
  writeRoute(app, deps, r.cancel, cancelAccountPlanUnit);
}
