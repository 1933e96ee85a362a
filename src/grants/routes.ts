/** The grant list route (docs/api.md#grant-list). */
import type { App, AppDeps } from "../http/context.ts";
import { accountPage } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { listGrantsQuery, listGrantsResponse } from "./schemas.ts";
import { grantJson, listGrants } from "./service.ts";

/** The grant routes. */
export const grantRoutes = resourceRoutes("Credit grants", (route) => ({
  list: route.get("/v1/accounts/grants", "List an account's credit grants, newest first", {
    query: listGrantsQuery,
    ok: listGrantsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
}));

export function registerGrantRoutes(app: App, deps: AppDeps): void {
  app.openapi(grantRoutes.list, async (c) => {
    const q = c.req.valid("query");
    const { rows, pagination, nowMs } = await accountPage(deps, c.get("projectId"), q, listGrants);
    const grants = rows.map((g) => grantJson(g, nowMs));
    return ok(c, grantRoutes.list, { success: true, grants, pagination });
  });
}
