/** Routes of docs/api.md#endpoints: create, update, list, get and balance of accounts. */
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { pagination } from "../http/schemas.ts";
import {
  accountRefQuery,
  accountSchema,
  balanceSchema,
  createAccountBody,
  createAccountResponse,
  listAccountsQuery,
  listAccountsResponse,
  updateAccountBody,
  updateAccountResponse,
} from "./schemas.ts";
import {
  accountJson,
  balanceView,
  createAccount,
  listAccounts,
  resolveAccount,
  updateAccount,
} from "./service.ts";

const route = resourceRoutes("Accounts");

const createRoute_ = route.post("/v1/accounts/create", "Create an account", {
  body: createAccountBody,
  ok: createAccountResponse,
  errors: ["DUPLICATE_EXTERNAL_ID"],
});

const updateRoute = route.post(
  "/v1/accounts/update",
  "Change an account's name, email, metadata or low-balance threshold",
  {
    body: updateAccountBody,
    ok: updateAccountResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  },
);

const listRoute = route.get("/v1/accounts", "List the project's accounts", {
  query: listAccountsQuery,
  ok: listAccountsResponse,
});

const getRoute = route.get("/v1/accounts/get", "Get an account by internal id or externalId", {
  query: accountRefQuery,
  ok: accountSchema,
  errors: ["ACCOUNT_NOT_FOUND"],
});

const balanceRoute = route.get("/v1/accounts/balance", "Balance, reserved and available credits", {
  query: accountRefQuery,
  ok: balanceSchema,
  errors: ["ACCOUNT_NOT_FOUND"],
});

/** The account routes, for tests and tools that call them by definition. */
export const accountRoutes = {
  create: createRoute_,
  update: updateRoute,
  list: listRoute,
  get: getRoute,
  balance: balanceRoute,
};

export function registerAccountRoutes(app: App, deps: AppDeps): void {
  app.openapi(createRoute_, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, createRoute_, async (trx, nowMs, reply) => {
      const row = await createAccount(trx, projectId, body, nowMs);
      return reply({ success: true, account: accountJson(row) });
    });
  });

  app.openapi(updateRoute, async (c) => {
    const { accountId, ...fields } = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, updateRoute, async (trx, nowMs, reply) => {
      const row = await updateAccount(trx, projectId, { accountRef: accountId, ...fields }, nowMs);
      return reply({ success: true, account: accountJson(row) });
    });
  });

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const page = { limit: query.limit, offset: query.offset };
    const { rows, totalCount } = await listAccounts(deps.db.read, c.get("projectId"), page);
    const accounts = rows.map(accountJson);
    const paging = pagination(page, rows.length, totalCount);
    // The list is bounded like every other; `pagination` comes when the caller paged, or when
    // the page does not hold every account (docs/api.md#account-list).
    const asked = c.req.query("limit") !== undefined || c.req.query("offset") !== undefined;
    if (!asked && !paging.hasMore) return ok(c, listRoute, { accounts });
    return ok(c, listRoute, { accounts, pagination: paging });
  });

  app.openapi(getRoute, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    return ok(c, getRoute, accountJson(account));
  });

  app.openapi(balanceRoute, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    return ok(c, balanceRoute, await balanceView(deps.db.read, account, deps.clock()));
  });
}
