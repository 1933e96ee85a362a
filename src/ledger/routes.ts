/** Routes of add and deduct, and of an account's credit grants (docs/api.md#endpoints). */
import type { Transaction } from "kysely";
import { accountPage } from "../accounts/pages.ts";
import type { DB } from "../db/schema.ts";
import type { App, AppDeps } from "../http/context.ts";
import { writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { fromMicros } from "../money.ts";
import { listGrants } from "./grants.ts";
import {
  addCreditsBody,
  addCreditsResponse,
  deductCreditsBody,
  deductCreditsResponse,
  grantJson,
  listGrantsQuery,
  listGrantsResponse,
} from "./schemas.ts";
import { grantTerms, moveCredits } from "./service.ts";

/** The balance adjustment and credit grant routes. */
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
  ...resourceRoutes("Credit grants", (route) => ({
    grants: route.get("/v1/accounts/grants", "List an account's credit grants, newest first", {
      query: listGrantsQuery,
      ok: listGrantsResponse,
      errors: ["ACCOUNT_NOT_FOUND"],
    }),
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

  app.openapi(r.grants, async (c) => {
    const q = c.req.valid("query");
    const { rows, pagination, nowMs } = await accountPage(deps, c.get("projectId"), q, listGrants);
    const grants = rows.map((g) => grantJson(g, nowMs));
    return ok(c, r.grants, { success: true, grants, pagination });
  });
}
