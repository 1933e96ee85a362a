/**
 * `POST /v1/accounts/transfer` (docs/api.md#transfers): credits moved between two accounts of
 * the project that fund themselves, in one write unit (src/ledger/transfer.ts). Also a batch
 * operation (docs/api.md#batches).
 */
import { z } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { ex } from "../http/examples.ts";
import { type WriteInput, writeRoute } from "../http/handlers.ts";
import { resourceRoutes } from "../http/routes.ts";
import { creditAmount, descriptionString, idString, metadataSchema } from "../http/schemas.ts";
import { grantTermsFields } from "../ledger/schemas.ts";
import { grantTerms } from "../ledger/service.ts";
import { transferCredits } from "../ledger/transfer.ts";
import { fromMicros } from "../money.ts";
import { transactionJson, transactionSchema } from "./schemas.ts";

export const transferBody = z
  .strictObject({
    fromAccountId: idString.openapi({
      description: "The source: internal id or externalId",
      example: "acme-corp",
    }),
    toAccountId: idString.openapi({
      description: "The destination: internal id or externalId",
      example: "acme-eu",
    }),
    amount: creditAmount().openapi({ example: 50 }),
    priority: grantTermsFields.priority,
    expiresAt: grantTermsFields.expiresAt.openapi({
      description:
        "When what is left of the credit expires (default: the earliest expiry of the grants " +
        "the debit drew from, none when none expires)",
    }),
    description: descriptionString.optional().openapi({ example: "Budget for the EU team" }),
    metadata: metadataSchema.optional().openapi({ example: { ticket: "FIN-88" } }),
  })
  .openapi("TransferRequest", {
    example: {
      fromAccountId: "acme-corp",
      toAccountId: "acme-eu",
      amount: 50,
      description: "Budget for the EU team",
    },
  });

/** A half of the example transfer. */
const exampleHalf = (type: "credit" | "debit", accountId: string, balanceAfter: number) => ({
  id: type === "debit" ? "txn_01M7YKB3F8Q2W6E4R0T9Y1U3I5" : "txn_01M7YKB3F8Q2W6E4R0T9Y1U3I6",
  accountId,
  type,
  amount: 50,
  description: "Budget for the EU team",
  balanceAfter,
  metadata: {},
  createdAt: ex.confirmedAt,
  reversalOf: null,
  amountReversed: 0,
  onBehalfOf: null,
  transferId: "trf_01M7YKB3F8Q2W6E4R0T9Y1U3I7",
});

const transferHalf = transactionSchema.omit({ reservation: true, usage: true });

export const transferResponse = z
  .object({
    success: z.literal(true),
    transferId: z.string().openapi({ example: "trf_01M7YKB3F8Q2W6E4R0T9Y1U3I7" }),
    debit: transferHalf.openapi({ description: "The debit on the source" }),
    credit: transferHalf.openapi({ description: "The credit (a grant) on the destination" }),
    fromBalance: z.number().openapi({ description: "The source's balance after", example: 150 }),
    toBalance: z.number().openapi({ description: "The destination's balance after", example: 50 }),
  })
  .openapi("TransferResponse", {
    example: {
      success: true,
      transferId: "trf_01M7YKB3F8Q2W6E4R0T9Y1U3I7",
      debit: exampleHalf("debit", ex.accountId, 150),
      credit: exampleHalf("credit", "acc_01M7YKB3F8Q2W6E4R0T9Y1U3I8", 50),
      fromBalance: 150,
      toBalance: 50,
    },
  });

/** The transfer route. */
export const transferRoutes = resourceRoutes("Transfers", (route) => ({
  transfer: route.post("/v1/accounts/transfer", "Move credits from one account to another", {
    operationId: "transferCredits",
    description:
      "Moves `amount` credits between two accounts of the project that fund themselves, in " +
      "one transaction: a debit on the source (drawn as any debit; needs `amount ≤ " +
      "available`, else 402) and a credit on the destination, a grant of `priority` (default " +
      "50) expiring at `expiresAt` (default: the earliest expiry of the grants the debit drew " +
      "from). Both halves carry `transferId`. A transfer is not spending: no spend limit " +
      "refuses it or counts it, and it cannot be reversed.",
    body: transferBody,
    ok: transferResponse,
    errors: [
      "ACCOUNT_NOT_FOUND",
      "INSUFFICIENT_CREDITS",
      "FUNDED_BY_PARENT",
      "BALANCE_LIMIT_EXCEEDED",
    ],
  }),
}));

/** The write unit of `POST /v1/accounts/transfer`. */
export async function transferUnit(input: WriteInput<typeof transferRoutes.transfer>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const terms = grantTerms(body, nowMs);
  const done = await transferCredits(
    trx,
    projectId,
    {
      fromRef: body.fromAccountId,
      toRef: body.toAccountId,
      amountMicros: body.amount,
      priority: terms.priority,
      expiresAtMs: terms.expiresAtMs ?? undefined,
      description: body.description,
      metadata: body.metadata,
    },
    nowMs,
  );
  const half = (row: typeof done.debit) => {
    const { reservation: _r, usage: _u, ...json } = transactionJson(row);
    return json;
  };
  return reply({
    success: true as const,
    transferId: done.transferId,
    debit: half(done.debit),
    credit: half(done.credit),
    fromBalance: fromMicros(done.fromBalanceMicros),
    toBalance: fromMicros(done.toBalanceMicros),
  });
}

/** Registers the transfer route's handler on `app`. */
export function registerTransferRoutes(app: App, deps: AppDeps): void {
  writeRoute(app, deps, transferRoutes.transfer, transferUnit);
}
