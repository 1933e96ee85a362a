/** The grant list route (docs/api.md#grant-list). */
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps } from "../http/context.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { pagination } from "../http/schemas.ts";
import { listGrantsQuery, listGrantsResponse } from "./schemas.ts";
import { grantJson, listGrants } from "./service.ts";

const route = resourceRoutes("Credit grants");

const listRoute = route.get(
  "/v1/accounts/grants",
  "List an account's credit grants, newest first",
  {
    query: listGrantsQuery,
    ok: listGrantsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  },
);

/** The grant routes. */
export const grantRoutes = { list: listRoute };

export function registerGrantRoutes(app: App, deps: AppDeps): void {
  app.openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    const account = await resolveAccount(deps.db.read, c.get("projectId"), q);
    const nowMs = deps.clock();
    const page = { limit: q.limit, offset: q.offset };
    const { rows, totalCount } = await listGrants(deps.db.read, account.id, {
      activeOnly: q.activeOnly ?? false,
      ...page,
      nowMs,
    });
    return ok(c, listRoute, {
      success: true,
      grants: rows.map((g) => grantJson(g, nowMs)),
      pagination: pagination(page, rows.length, totalCount),
    });
  });
}
