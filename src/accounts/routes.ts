/** Routes of docs/api.md#endpoints: create, list, get and balance of accounts. */
import { createRoute } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok } from "../http/respond.ts";
import { errorResponses, jsonBody, okJson, pagination } from "../http/schemas.ts";
import {
  accountRefQuery,
  accountSchema,
  balanceSchema,
  createAccountBody,
  createAccountResponse,
  listAccountsQuery,
  listAccountsResponse,
} from "./schemas.ts";
import {
  accountJson,
  balanceView,
  createAccount,
  listAccounts,
  resolveAccount,
} from "./service.ts";

const tags = ["Accounts"];

const createRoute_ = createRoute({
  method: "post",
  path: "/v1/accounts/create",
  tags,
  summary: "Create an account",
  request: { body: jsonBody(createAccountBody) },
  responses: {
    ...okJson(createAccountResponse, "The new account, balance 0"),
    ...errorResponses("DUPLICATE_EXTERNAL_ID"),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/v1/accounts",
  tags,
  summary: "List the project's accounts",
  request: { query: listAccountsQuery },
  responses: { ...okJson(listAccountsResponse, "Accounts, oldest first"), ...errorResponses() },
});

const getRoute = createRoute({
  method: "get",
  path: "/v1/accounts/get",
  tags,
  summary: "Get an account by internal id or externalId",
  request: { query: accountRefQuery },
  responses: { ...okJson(accountSchema, "The account"), ...errorResponses("ACCOUNT_NOT_FOUND") },
});

const balanceRoute = createRoute({
  method: "get",
  path: "/v1/accounts/balance",
  tags,
  summary: "Balance, reserved and available credits",
  request: { query: accountRefQuery },
  responses: {
    ...okJson(balanceSchema, "The balance view"),
    ...errorResponses("ACCOUNT_NOT_FOUND"),
  },
});

/** The account routes, for tests and tools that call them by definition. */
export const accountRoutes = {
  create: createRoute_,
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
