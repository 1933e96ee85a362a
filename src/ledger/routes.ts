/** Routes of spec §4.2 (add, deduct) and §4.5 (transaction list, manual transaction). */
import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { errorResponses, jsonBody, okJson } from "../http/schemas.ts";
import { fromMicros } from "../money.ts";
import { transactionJson } from "./core.ts";
import {
  addCreditsBody,
  addCreditsResponse,
  createTransactionBody,
  createTransactionResponse,
  deductCreditsBody,
  deductCreditsResponse,
  listTransactionsQuery,
  listTransactionsResponse,
} from "./schemas.ts";
import { dateRangeMs, listTransactions, moveCredits, withAuditData } from "./service.ts";

const addRoute = createRoute({
  method: "post",
  path: "/v1/accounts/credits/add",
  tags: ["Balance adjustments"],
  summary: "Add credits (purchase, refund, bonus)",
  request: { body: jsonBody(addCreditsBody) },
  responses: {
    ...okJson(addCreditsResponse, "The new balance"),
    ...errorResponses("ACCOUNT_NOT_FOUND", "BALANCE_LIMIT_EXCEEDED", "IDEMPOTENCY_KEY_REUSED"),
  },
});

const deductRoute = createRoute({
  method: "post",
  path: "/v1/accounts/credits/deduct",
  tags: ["Balance adjustments"],
  summary: "Deduct credits without a reservation",
  request: { body: jsonBody(deductCreditsBody) },
  responses: {
    ...okJson(deductCreditsResponse, "The new balance"),
    ...errorResponses("INSUFFICIENT_CREDITS", "ACCOUNT_NOT_FOUND", "IDEMPOTENCY_KEY_REUSED"),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/v1/transactions",
  tags: ["Transactions"],
  summary: "List ledger entries, newest first",
  request: { query: listTransactionsQuery },
  responses: {
    ...okJson(listTransactionsResponse, "A page of transactions"),
    ...errorResponses("ACCOUNT_NOT_FOUND"),
  },
});

const createTxRoute = createRoute({
  method: "post",
  path: "/v1/transactions/create",
  tags: ["Transactions"],
  summary: "Create a manual transaction (adjustment, refund, migration)",
  request: { body: jsonBody(createTransactionBody) },
  responses: {
    ...okJson(createTransactionResponse, "The new transaction"),
    ...errorResponses(
      "ACCOUNT_NOT_FOUND",
      "INSUFFICIENT_CREDITS",
      "BALANCE_LIMIT_EXCEEDED",
      "IDEMPOTENCY_KEY_REUSED",
    ),
  },
});

/**
 * Add or deduct (spec §4.2): one ledger entry, answered with the new balance and the amount
 * under `added` or `deducted`.
 */
function adjustBalance(
  deps: AppDeps,
  kind:
    | { type: "credit"; source: "add"; field: "added" }
    | { type: "debit"; source: "deduct"; field: "deducted" },
) {
  return async (
    c: Context<AppEnv>,
    body: {
      accountId: string;
      amount: number;
      description?: string | undefined;
      metadata?: Record<string, unknown> | undefined;
      paymentMethod?: string | undefined;
    },
  ) => {
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, async (trx, nowMs) => {
      const metadata = { ...body.metadata };
      if (body.paymentMethod !== undefined) metadata.paymentMethod = body.paymentMethod;
      const { account, row } = await moveCredits(
        trx,
        projectId,
        {
          accountRef: body.accountId,
          type: kind.type,
          amountMicros: body.amount,
          description: body.description,
          metadata,
          source: kind.source,
        },
        nowMs,
      );
      const result = {
        success: true,
        accountId: account.id,
        externalId: account.external_id,
        balance: fromMicros(row.balance_after_micros),
        [kind.field]: fromMicros(row.amount_micros),
        transactionId: row.id,
      };
      return { status: 200, body: result };
    });
  };
}

export function registerLedgerRoutes(app: App, deps: AppDeps): void {
  const add = adjustBalance(deps, { type: "credit", source: "add", field: "added" });
  const deduct = adjustBalance(deps, { type: "debit", source: "deduct", field: "deducted" });
  app.openapi(addRoute, (c) => add(c, c.req.valid("json")) as never);
  app.openapi(deductRoute, (c) => deduct(c, c.req.valid("json")) as never);

  app.openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { startMs, endMs } = dateRangeMs(q.startDate, q.endDate);
    const named = q.accountId !== undefined || q.externalId !== undefined;
    const account = named ? await resolveAccount(deps.db.read, projectId, q) : undefined;
    const limit = q.limit ?? 50;
    const offset = q.offset ?? 0;
    const { rows, totalCount } = await listTransactions(deps.db.read, projectId, {
      accountId: account?.id,
      startMs,
      endMs,
      limit,
      offset,
    });
    const parts = new Set((q.include ?? "").split(",").map((p) => p.trim()));
    const include = { reservation: parts.has("reservation"), usage: parts.has("usage") };
    const items = await withAuditData(deps.db.read, rows, include, deps.clock());
    const pagination = { limit, offset, totalCount, hasMore: offset + rows.length < totalCount };
    return c.json({ items, pagination } as never, 200);
  });

  app.openapi(createTxRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, async (trx, nowMs) => {
      const { row } = await moveCredits(
        trx,
        projectId,
        {
          accountRef: body.accountId,
          type: body.type,
          amountMicros: body.amount,
          description: body.description,
          metadata: body.metadata,
          source: "manual",
        },
        nowMs,
      );
      const { id, accountId, type, amount, balanceAfter, createdAt, description, metadata } =
        transactionJson(row);
      const transaction = {
        id,
        accountId,
        type,
        amount,
        balanceAfter,
        createdAt,
        description,
        metadata,
      };
      return { status: 200, body: { success: true, transaction } };
    }) as never;
  });
}
