/** Routes of spec §4.1: create, list, get and balance of accounts. */
import { createRoute } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { errorResponses, jsonBody, okJson } from "../http/schemas.ts";
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

export function registerAccountRoutes(app: App, deps: AppDeps): void {
  app.openapi(createRoute_, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, async (trx, nowMs) => {
      const row = await createAccount(trx, projectId, body, nowMs);
      return { status: 200, body: { success: true, account: accountJson(row) } };
    }) as never;
  });

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const paged = query.limit !== undefined || query.offset !== undefined;
    const page = paged ? { limit: query.limit ?? 50, offset: query.offset ?? 0 } : undefined;
    const { rows, totalCount } = await listAccounts(deps.db.read, c.get("projectId"), page);
    const accounts = rows.map(accountJson);
    if (!page) return c.json({ accounts }, 200);
    const pagination = {
      ...page,
      totalCount,
      hasMore: page.offset + rows.length < totalCount,
    };
    return c.json({ accounts, pagination }, 200);
  });

  app.openapi(getRoute, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    return c.json(accountJson(account), 200);
  });

  app.openapi(balanceRoute, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    return c.json(await balanceView(deps.db.read, account, deps.clock()), 200);
  });
}
