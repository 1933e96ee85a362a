/** Routes of docs/api.md#endpoints: create, update, list, get and balance of accounts. */
import type { z } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { type OperationId, resourceRoutes } from "../http/routes.ts";
import {
  accountJson,
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
  balanceView,
  createAccount,
  listAccounts,
  resolveAccount,
  updateAccount,
} from "./service.ts";

/** The account routes, for tests and tools that call them by definition. */
export const accountRoutes = resourceRoutes("Accounts", (route) => {
  /** A read of the account a query names (`accountId` or `externalId`). */
  const byRef = <const P extends string, S extends z.ZodType>(
    path: P,
    summary: string,
    operation: { operationId: OperationId; description: string },
    ok: S,
  ) =>
    route.get(path, summary, {
      ...operation,
      query: accountRefQuery,
      ok,
      errors: ["ACCOUNT_NOT_FOUND"],
    });
  return {
    create: route.post("/v1/accounts/create", "Create an account", {
      operationId: "createAccount",
      description:
        "Creates an account for one of your customers, named by your `externalId` (unique in " +
        "the project; 409 `DUPLICATE_EXTERNAL_ID` otherwise). `name` and `email` default to " +
        '`""`, `metadata` to null, and the balance starts at 0. `lowBalanceThreshold` makes ' +
        "the account fire `balance.low` events.",
      body: createAccountBody,
      ok: createAccountResponse,
      errors: ["DUPLICATE_EXTERNAL_ID"],
    }),
    update: route.post(
      "/v1/accounts/update",
      "Change an account's name, email, metadata or low-balance threshold",
      {
        operationId: "updateAccount",
        description:
          "Changes only the fields given: `name`, `email`, `metadata` (replaced whole) or " +
          "`lowBalanceThreshold` (null removes it). `accountId` is the internal id or the " +
          "`externalId`. Changing the threshold fires no event.",
        body: updateAccountBody,
        ok: updateAccountResponse,
        errors: ["ACCOUNT_NOT_FOUND"],
      },
    ),
    get: byRef(
      "/v1/accounts/get",
      "Get an account by internal id or externalId",
      {
        operationId: "getAccount",
        description:
          "Answers the Account object itself (no `success` envelope). Name the account with " +
          "`accountId` (internal id or `externalId`) or `externalId`.",
      },
      accountSchema,
    ),
    balance: byRef(
      "/v1/accounts/balance",
      "Balance, reserved and available credits",
      {
        operationId: "getBalance",
        description:
          "Answers `balance`, `reserved` (the pending, unexpired holds) and `available` " +
          "(balance − reserved), the amount a deduction or reservation may take. Reading " +
          "books nothing.",
      },
      balanceSchema,
    ),
    list: route.get("/v1/accounts", "List the project's accounts", {
      operationId: "listAccounts",
      description:
        "Lists the project's accounts, oldest first, `limit` (1–500, default 50) from " +
        "`offset`. `pagination` is present when `limit` or `offset` was given, and whenever " +
        "more accounts exist beyond the page.",
      query: listAccountsQuery,
      ok: listAccountsResponse,
    }),
  };
});

export function registerAccountRoutes(app: App, deps: AppDeps): void {
  const r = accountRoutes;
  writeRoute(app, deps, r.create, async ({ trx, nowMs, body, projectId, reply }) => {
    const row = await createAccount(trx, projectId, body, nowMs);
    return reply({ success: true, account: accountJson(row) });
  });

  writeRoute(app, deps, r.update, async ({ trx, nowMs, body, projectId, reply }) => {
    const { accountId, ...fields } = body;
    const row = await updateAccount(trx, projectId, { accountRef: accountId, ...fields }, nowMs);
    return reply({ success: true, account: accountJson(row) });
  });

  app.openapi(r.list, async (c) => {
    const projectId = c.get("projectId");
    const query = c.req.valid("query");
    const { rows, pagination } = await paged(query, (page) =>
      listAccounts(deps.db.read, projectId, { ...page, search: query.search }),
    );
    const accounts = rows.map(accountJson);
    // The list is bounded like every other; `pagination` comes when the caller paged, or when
    // the page does not hold every account (docs/api.md#account-list).
    const asked = c.req.query("limit") !== undefined || c.req.query("offset") !== undefined;
    if (!asked && !pagination.hasMore) return ok(c, r.list, { accounts });
    return ok(c, r.list, { accounts, pagination });
  });

  app.openapi(r.get, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    return ok(c, r.get, accountJson(account));
  });

  app.openapi(r.balance, async (c) => {
    const query = c.req.valid("query");
    return ok(
      c,
      r.balance,
      await balanceView(deps.db.read, c.get("projectId"), query, deps.clock()),
    );
  });
}
