/** Routes of add and deduct, and of an account's credit grants (docs/api.md#endpoints). */
import type { RouteHandler } from "@hono/zod-openapi";
import type { Transaction } from "kysely";
import { accountPage } from "../accounts/pages.ts";
import type { DB } from "../db/schema.ts";
import { mapPlain } from "../db/write-path.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { type WriteInput, type WriteRouteOptions, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { fromMicros } from "../money.ts";
import type { PostedEntry } from "./core.ts";
import { listGrants } from "./grants.ts";
import { plainDebit } from "./plain-debit.ts";
import {
  addCreditsBody,
  addCreditsResponse,
  deductCreditsBody,
  deductCreditsResponse,
  grantJson,
  listGrantsQuery,
  listGrantsResponse,
} from "./schemas.ts";
import { debitOf, grantTerms, moveCredits } from "./service.ts";

/** The balance adjustment and credit grant routes. */
export const ledgerRoutes = {
  ...resourceRoutes("Balance adjustments", (route) => ({
    add: route.post("/v1/accounts/credits/add", "Add credits (purchase, refund, bonus)", {
      operationId: "addCredits",
      description:
        "Credits the account and answers the new `balance`, the `transactionId` of the ledger " +
        "entry and the `grantId` of the credit grant it makes, with the optional `priority` " +
        "(0–100, lower is spent first, default 50) and `expiresAt`. A balance may not pass " +
        "9e9 credits (409 `BALANCE_LIMIT_EXCEEDED`).",
      body: addCreditsBody,
      ok: addCreditsResponse,
      errors: ["ACCOUNT_NOT_FOUND", "BALANCE_LIMIT_EXCEEDED", "FUNDED_BY_PARENT"],
    }),
    deduct: route.post("/v1/accounts/credits/deduct", "Deduct credits without a reservation", {
      operationId: "deductCredits",
      description:
        "Debits the account at once, spending its grants in the spending order. Needs " +
        "`amount ≤ available` (402 `INSUFFICIENT_CREDITS` otherwise, and nothing changes).",
      body: deductCreditsBody,
      ok: deductCreditsResponse,
      errors: ["INSUFFICIENT_CREDITS", "SPEND_LIMIT_EXCEEDED", "ACCOUNT_NOT_FOUND"],
    }),
  })),
  ...resourceRoutes("Credit grants", (route) => ({
    grants: route.get("/v1/accounts/grants", "List an account's credit grants, newest first", {
      operationId: "listGrants",
      description:
        "Lists one account's credit grants with their `remaining` credits, `priority`, " +
        "`expiresAt` and `status` (`active`, `spent` or `expired`); `activeOnly=true` keeps " +
        "the active ones. The balance always equals the sum of the grants' `remaining`.",
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
  if (type === "debit") return moveCredits(trx, projectId, deduction(body), nowMs);
  return moveCredits(
    trx,
    projectId,
    {
      accountRef: body.accountId,
      type,
      amountMicros: body.amount,
      description: body.description,
      metadata: metadataOf(body),
      source: "add",
      grant: grantTerms(body, nowMs),
    },
    nowMs,
  );
}

/** The movement of a deduction. */
function deduction(body: AdjustmentBody) {
  return {
    accountRef: body.accountId,
    type: "debit" as const,
    amountMicros: body.amount,
    description: body.description,
    metadata: metadataOf(body),
    source: "deduct" as const,
  };
}

/** An adjustment's entry metadata: the body's, with `paymentMethod` when given. */
function metadataOf(body: AdjustmentBody): Record<string, unknown> {
  const metadata = { ...body.metadata };
  if (body.paymentMethod !== undefined) metadata.paymentMethod = body.paymentMethod;
  return metadata;
}

/** The 200 body of a deduction that stored `row` on `account`. */
function deducted(account: { id: string; external_id: string }, row: PostedEntry) {
  return {
    success: true as const,
    accountId: account.id,
    externalId: account.external_id,
    balance: fromMicros(row.balance_after_micros),
    deducted: fromMicros(row.amount_micros),
    transactionId: row.id,
  };
}

type Routes = typeof ledgerRoutes;

/** The write unit of `POST /v1/accounts/credits/add`: a credit, with its grant. */
export async function addCreditsUnit(input: WriteInput<Routes["add"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
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
}

/** The write unit of `POST /v1/accounts/credits/deduct` (the general path). */
export async function deductCreditsUnit(input: WriteInput<Routes["deduct"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const { account, row } = await adjust(trx, projectId, body, "debit", nowMs);
  return reply(deducted(account, row));
}

/** The plain path of `POST /v1/accounts/credits/deduct` (docs/design.md#plain-writes). */
export const plainDeductCredits: WriteRouteOptions<Routes["deduct"]>["plain"] = ({
  body,
  projectId,
  reply,
}) =>
  mapPlain(plainDebit(debitOf(projectId, deduction(body))), ({ account, row }) =>
    reply(deducted(account, row)),
  );

/** `GET /v1/accounts/grants`: one page of an account's credit grants. */
export function listGrantsHandler(deps: AppDeps): RouteHandler<Routes["grants"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const { rows, pagination, nowMs } = await accountPage(deps, c.get("projectId"), q, listGrants);
    const grants = rows.map((g) => grantJson(g, nowMs));
    return ok(c, ledgerRoutes.grants, { success: true, grants, pagination });
  };
}

/** Registers the add, deduct and grant list routes' handlers on `app`. */
export function registerLedgerRoutes(app: App, deps: AppDeps): void {
  const r = ledgerRoutes;
  writeRoute(app, deps, r.add, addCreditsUnit);
  writeRoute(app, deps, r.deduct, deductCreditsUnit, { plain: plainDeductCredits });
  app.openapi(r.grants, listGrantsHandler(deps));
}
