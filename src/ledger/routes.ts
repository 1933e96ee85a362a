/** Routes of add, deduct, the transaction list and manual transactions (docs/api.md#endpoints). */
import type { Transaction } from "kysely";
import { resolveAccount } from "../accounts/service.ts";
import type { DB } from "../db/schema.ts";
import type { App, AppDeps } from "../http/context.ts";
import { dateRangeMs } from "../http/dates.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
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
import { grantTerms, listTransactions, moveCredits, withAuditData } from "./service.ts";

/** The balance adjustment and transaction routes. */
export const ledgerRoutes = {
  ...resourceRoutes("Balance adjustments", (route) => ({
    add: route.post("/v1/accounts/credits/add", "Add credits (purchase, refund, bonus)", {
      body: addCreditsBody,
      ok: addCreditsResponse,
      errors: ["ACCOUNT_NOT_FOUND", "BALANCE_LIMIT_EXCEEDED"],
    }),
    deduct: route.post("/v1/accounts/credits/deduct", "Deduct credits without a reservation", {
      body: deductCreditsBody,
      ok: deductCreditsResponse,
      errors: ["INSUFFICIENT_CREDITS", "ACCOUNT_NOT_FOUND"],
    }),
  })),
  ...resourceRoutes("Transactions", (route) => ({
    list: route.get("/v1/transactions", "List ledger entries, newest first", {
      query: listTransactionsQuery,
      ok: listTransactionsResponse,
      errors: ["ACCOUNT_NOT_FOUND"],
    }),
    create: route.post(
      "/v1/transactions/create",
      "Create a manual transaction (adjustment, refund, migration)",
      {
        body: createTransactionBody,
        ok: createTransactionResponse,
        errors: ["ACCOUNT_NOT_FOUND", "INSUFFICIENT_CREDITS", "BALANCE_LIMIT_EXCEEDED"],
      },
    ),
  })),
};

/** What add and deduct take: the validated body of either route (amount in micro-credits). */
interface AdjustmentBody {
  accountId: string;
  amount: number;
  description?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  paymentMethod?: string | undefined;
  priority?: number | undefined;
  expiresAt?: string | undefined;
}

/**
 * The movement of add or deduct: one ledger entry, with `paymentMethod` kept in its metadata;
 * an add makes a grant with the body's `priority` and `expiresAt` (docs/api.md#grants).
 * @returns the account and the stored entry
 * @throws ApiError VALIDATION_ERROR (expiresAt not ahead of the write, or too far), and those of
 *   `moveCredits`
 */
function adjust(
  trx: Transaction<DB>,
  projectId: string,
  body: AdjustmentBody,
  type: "credit" | "debit",
  nowMs: number,
) {
  const metadata = { ...body.metadata };
  if (body.paymentMethod !== undefined) metadata.paymentMethod = body.paymentMethod;
  return moveCredits(
    trx,
    projectId,
    {
      accountRef: body.accountId,
      type,
      amountMicros: body.amount,
      description: body.description,
      metadata,
      source: type === "credit" ? "add" : "deduct",
      grant: type === "credit" ? grantTerms(body, nowMs) : undefined,
    },
    nowMs,
  );
}

export function registerLedgerRoutes(app: App, deps: AppDeps): void {
  const r = ledgerRoutes;
  writeRoute(app, deps, r.add, async ({ trx, nowMs, body, projectId, reply }) => {
    const { account, row } = await adjust(trx, projectId, body, "credit", nowMs);
    if (row.grantId === null) throw new Error("ledger invariant: a credit without its grant");
    return reply({
      success: true,
      accountId: account.id,
      externalId: account.external_id,
      balance: fromMicros(row.balance_after_micros),
      added: fromMicros(row.amount_micros),
      transactionId: row.id,
      grantId: row.grantId,
    });
  });

  writeRoute(app, deps, r.deduct, async ({ trx, nowMs, body, projectId, reply }) => {
    const { account, row } = await adjust(trx, projectId, body, "debit", nowMs);
    return reply({
      success: true,
      accountId: account.id,
      externalId: account.external_id,
      balance: fromMicros(row.balance_after_micros),
      deducted: fromMicros(row.amount_micros),
      transactionId: row.id,
    });
  });

  app.openapi(r.list, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { startMs, endMs } = dateRangeMs(q.startDate, q.endDate);
    const named = q.accountId !== undefined || q.externalId !== undefined;
    const account = named ? await resolveAccount(deps.db.read, projectId, q) : undefined;
    const filter = { accountId: account?.id, startMs, endMs };
    const { rows, pagination } = await paged(q, (page) =>
      listTransactions(deps.db.read, projectId, { ...filter, ...page }),
    );
    const parts = new Set((q.include ?? "").split(",").map((p) => p.trim()));
    const include = { reservation: parts.has("reservation"), usage: parts.has("usage") };
    const items = await withAuditData(deps.db.read, rows, include, deps.clock());
    return ok(c, r.list, { items, pagination });
  });

  writeRoute(app, deps, r.create, async ({ trx, nowMs, body, projectId, reply }) => {
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
        grant: body.type === "credit" ? grantTerms(body, nowMs) : undefined,
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
    const grantId = row.grantId ?? undefined;
    return reply({ success: true, transaction, ...(grantId === undefined ? {} : { grantId }) });
  });
}
