/**
 * The spend limit reads (docs/api.md#spend-limits): `GET /v1/accounts/limits` and
 * `GET /v1/accounts/check`, part of the account routes (src/accounts/routes.ts), each handler a
 * named function.
 */

import type { App, AppDeps } from "../http/context.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { checkQuery, checkResponse, limitsResponse } from "../limits/schemas.ts";
import { checkView, limitsView } from "./limit-view.ts";
import { accountRefQuery } from "./schemas.ts";

/** The spend limit routes, for tests and tools that call them by definition. */
export const limitRoutes = resourceRoutes("Accounts", (route) => ({
  limits: route.get("/v1/accounts/limits", "Spend limits and their current windows", {
    operationId: "getSpendLimits",
    description:
      "Answers each spend limit's current window (`windowStart`, `resetsAt`) with what it " +
      "`spent` (spending debits booked in it), `held` (pending, unexpired reservations) and " +
      "its `remaining`, and `spendable`: the largest deduction that would succeed now.",
    query: accountRefQuery,
    ok: limitsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
  check: route.get("/v1/accounts/check", "Would a deduction succeed now?", {
    operationId: "checkSpend",
    description:
      "Tells whether a deduction of `amount` would succeed now (`allowed`) and what it would " +
      "answer otherwise (`code`: `INSUFFICIENT_CREDITS` or `SPEND_LIMIT_EXCEEDED`), with the " +
      "limits' windows. A read: it changes nothing and holds nothing (a reservation holds).",
    query: checkQuery,
    ok: checkResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
}));

/** `GET /v1/accounts/limits`: each spend limit's current window. */
function registerGetLimits(app: App, deps: AppDeps): void {
  const route = limitRoutes.limits;
  app.openapi(route, async (c) => {
    const query = c.req.valid("query");
    return ok(c, route, await limitsView(deps.db.read, c.get("projectId"), query, deps.clock()));
  });
}

/** `GET /v1/accounts/check`: whether a deduction would succeed now. */
function registerCheckSpend(app: App, deps: AppDeps): void {
  const route = limitRoutes.check;
  app.openapi(route, async (c) => {
    const query = c.req.valid("query");
    return ok(c, route, await checkView(deps.db.read, c.get("projectId"), query, deps.clock()));
  });
}

/** Registers the spend limit reads. */
export function registerLimitRoutes(app: App, deps: AppDeps): void {
  registerGetLimits(app, deps);
  registerCheckSpend(app, deps);
}
