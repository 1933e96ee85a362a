/**
 * Routes of docs/api.md#endpoints: create, update, list, get and balance of accounts, and the
 * spend limit reads (docs/api.md#spend-limits). Each route's handler is a named function.
 */
import type { z } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { type OperationId, resourceRoutes } from "../http/routes.ts";
import { limitsOfInput } from "../limits/limits.ts";
import { registerAutoTopupRoutes } from "./auto-topup-routes.ts";
import { limitRoutes, registerLimitRoutes } from "./limit-routes.ts";
import { poolIdOf, poolIds } from "./placement.ts";
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

/** The account writes: create and update. */
const accountWriteRoutes = resourceRoutes("Accounts", (route) => ({
  create: route.post("/v1/accounts/create", "Create an account", {
    operationId: "createAccount",
    description:
      "Creates an account for one of your customers, named by your `externalId` (unique in " +
      "the project; 409 `DUPLICATE_EXTERNAL_ID` otherwise). `name` and `email` default to " +
      '`""`, `metadata` to null, and the balance starts at 0. `lowBalanceThreshold` makes ' +
      "the account fire `balance.low` events; `spendLimits` caps what it spends per hour, " +
      "day, week or month.",
    body: createAccountBody,
    ok: createAccountResponse,
    errors: ["DUPLICATE_EXTERNAL_ID", "ACCOUNT_NOT_FOUND", "FUNDED_BY_PARENT"],
  }),
  update: route.post(
    "/v1/accounts/update",
    "Change an account's name, email, metadata, low-balance threshold or spend limits",
    {
      operationId: "updateAccount",
      description:
        "Changes only the fields given: `name`, `email`, `metadata` (replaced whole) or " +
        "`lowBalanceThreshold` (null removes it) or `spendLimits` (replaces the whole list; " +
        "`[]` or null removes every limit). `accountId` is the internal id or the " +
        "`externalId`. Changing the threshold or the limits fires no event.",
      body: updateAccountBody,
      ok: updateAccountResponse,
      errors: ["ACCOUNT_NOT_FOUND", "ACCOUNT_BUSY", "FUNDED_BY_PARENT"],
    },
  ),
}));

/** The account reads: get, balance and the list. */
const accountReadRoutes = resourceRoutes("Accounts", (route) => {
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

/** The account routes, for tests and tools that call them by definition. */
export const accountRoutes = { ...accountWriteRoutes, ...accountReadRoutes, ...limitRoutes };

/** `POST /v1/accounts/create`: a new account, with its spend limits if given. */
function registerCreateAccount(app: App, deps: AppDeps): void {
  writeRoute(app, deps, accountRoutes.create, async ({ trx, nowMs, body, projectId, reply }) => {
    const { spendLimits, ...fields } = body;
    const input = { ...fields, spendLimits: limitsOfInput(spendLimits ?? null) };
    const row = await createAccount(trx, projectId, input, nowMs);
    return reply({ success: true, account: accountJson(row, await poolIdOf(trx, row)) });
  });
}

/** `POST /v1/accounts/update`: the fields given, `spendLimits` replacing the whole list. */
function registerUpdateAccount(app: App, deps: AppDeps): void {
  writeRoute(app, deps, accountRoutes.update, async ({ trx, nowMs, body, projectId, reply }) => {
    const { accountId, spendLimits, ...fields } = body;
    const limits = spendLimits === undefined ? undefined : limitsOfInput(spendLimits);
    const input = { accountRef: accountId, ...fields, spendLimits: limits };
    const row = await updateAccount(trx, projectId, input, nowMs);
    return reply({ success: true, account: accountJson(row, await poolIdOf(trx, row)) });
  });
}

/** `GET /v1/accounts`: a page of the project's accounts. */
function registerListAccounts(app: App, deps: AppDeps): void {
  const route = accountRoutes.list;
  app.openapi(route, async (c) => {
    const projectId = c.get("projectId");
    const query = c.req.valid("query");
    const { rows, pagination } = await paged(query, (page) =>
      listAccounts(deps.db.read, projectId, {
        ...page,
        search: query.search,
        parentId: query.parentId,
      }),
    );
    const pools = await poolIds(deps.db.read, rows);
    const accounts = rows.map((row) => accountJson(row, pools.get(row.id) ?? row.id));
    // The list is bounded like every other; `pagination` comes when the caller paged, or when
    // the page does not hold every account (docs/api.md#account-list).
    const asked = c.req.query("limit") !== undefined || c.req.query("offset") !== undefined;
    if (!asked && !pagination.hasMore) return ok(c, route, { accounts });
    return ok(c, route, { accounts, pagination });
  });
}

/** `GET /v1/accounts/get`: the Account object. */
function registerGetAccount(app: App, deps: AppDeps): void {
  const route = accountRoutes.get;
  app.openapi(route, async (c) => {
    const account = await resolveAccount(deps.db.read, c.get("projectId"), c.req.valid("query"));
    return ok(c, route, accountJson(account, await poolIdOf(deps.db.read, account)));
  });
}

/** `GET /v1/accounts/balance`: balance, reserved and available. */
function registerGetBalance(app: App, deps: AppDeps): void {
  const route = accountRoutes.balance;
  app.openapi(route, async (c) => {
    const query = c.req.valid("query");
    const view = await balanceView(deps.db.read, c.get("projectId"), query, deps.clock());
    return ok(c, route, view);
  });
}

/** Registers every account route, each by its named function above. */
export function registerAccountRoutes(app: App, deps: AppDeps): void {
  registerCreateAccount(app, deps);
  registerUpdateAccount(app, deps);
  registerListAccounts(app, deps);
  registerGetAccount(app, deps);
  registerGetBalance(app, deps);
  registerLimitRoutes(app, deps);
  registerAutoTopupRoutes(app, deps);
}
