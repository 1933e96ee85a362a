/** Routes of the transaction list and of manual transactions (docs/api.md#endpoints). */
import type { RouteHandler, z } from "@hono/zod-openapi";
import { mapPlain } from "../db/write-path.ts";
import { csvLine } from "../exports/csv.ts";
import { exportFilename, exportResponse } from "../exports/stream.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { ex, exampleAddTransaction, exampleConfirmTransaction } from "../http/examples.ts";
import { paged, type WriteInput, type WriteRouteOptions, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { stringifyJson } from "../json.ts";
import type { PostedEntry } from "../ledger/core.ts";
import { plainDebit } from "../ledger/plain-debit.ts";
import { reverseTransaction } from "../ledger/reversal.ts";
import { debitOf, grantTerms, moveCredits } from "../ledger/service.ts";
import { ExactDecimal, fromMicros } from "../money.ts";
import { TRANSACTION_CSV_COLUMNS, transactionExport } from "./export.ts";
import {
  createTransactionBody,
  createTransactionResponse,
  exportTransactionsQuery,
  listTransactionsQuery,
  listTransactionsResponse,
  reverseTransactionBody,
  reverseTransactionResponse,
  transactionItemJson,
  transactionJson,
} from "./schemas.ts";
import {
  listTransactions,
  readAuditData,
  reversedAmounts,
  transactionFilterOf,
} from "./service.ts";

/** The start of a transaction export of the example account, as CSV and as NDJSON. */
const exampleEntries = [exampleAddTransaction, exampleConfirmTransaction].map((e) => ({
  ...e,
  reversalOf: null,
  amountReversed: 0,
  onBehalfOf: null,
  transferId: null,
}));
const exampleCsv =
  csvLine(TRANSACTION_CSV_COLUMNS) +
  exampleEntries
    .map((e) =>
      csvLine([
        e.id,
        e.createdAt,
        e.accountId,
        ex.externalId,
        e.type,
        new ExactDecimal(String(e.amount)),
        new ExactDecimal(String(e.balanceAfter)),
        e.description,
        e.type === "debit" ? ex.reservationId : null,
        stringifyJson(e.metadata),
        e.reversalOf,
        new ExactDecimal(String(e.amountReversed)),
        e.onBehalfOf,
        e.transferId,
      ]),
    )
    .join("");
const exampleNdjson = exampleEntries.map((e) => `${stringifyJson(e)}\n`).join("");

/** The movement of a manual transaction, but for a credit's grant terms. */
function manual(body: z.output<typeof createTransactionBody>) {
  return {
    accountRef: body.accountId,
    type: body.type,
    amountMicros: body.amount,
    description: body.description,
    metadata: body.metadata,
    source: "manual" as const,
  };
}

/** The transaction routes. */
export const transactionRoutes = resourceRoutes("Transactions", (route) => ({
  list: route.get("/v1/transactions", "List ledger entries, newest first", {
    operationId: "listTransactions",
    description:
      "Lists the ledger entries of one account (`accountId` or `externalId`) or of the whole " +
      "project, newest first, filtered by `startDate`/`endDate` (inclusive) and by `type` " +
      "(`credit` or `debit`) and by `reversalOf` (a transaction's id: its reversals). Each " +
      "entry has `reversalOf` (a reversal: the transaction it reverses) and `amountReversed` " +
      "(what its reversals add up to). `include` adds " +
      "each entry's settled `reservation` and its `usage` records.",
    query: listTransactionsQuery,
    ok: listTransactionsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
  export: route.download(
    "/v1/transactions/export",
    "Export ledger entries, oldest first, as CSV or NDJSON",
    {
      operationId: "exportTransactions",
      description:
        "Streams every ledger entry the list's filters select (`accountId`/`externalId`, " +
        "`type`, `startDate`, `endDate`, `reversalOf`), oldest first, without paging: " +
        "`format=csv` (default; RFC 4180, formula-safe; its last columns `reversalOf`, " +
        "`amountReversed`) or `format=ndjson` (each line the list's item). Entries committed " +
        "after the export began are not in it.",
      query: exportTransactionsQuery,
      csvExample: exampleCsv,
      ndjsonExample: exampleNdjson,
      errors: ["ACCOUNT_NOT_FOUND"],
    },
  ),
  create: route.post(
    "/v1/transactions/create",
    "Create a manual transaction (adjustment, refund, migration)",
    {
      operationId: "createTransaction",
      description:
        "Writes a `credit` (a grant, like an add: `priority`, `expiresAt`, `grantId`) or a " +
        "`debit` (needs `amount ≤ available`). Transactions are immutable; a correction is a " +
        "new transaction.",
      body: createTransactionBody,
      ok: createTransactionResponse,
      errors: [
        "ACCOUNT_NOT_FOUND",
        "INSUFFICIENT_CREDITS",
        "SPEND_LIMIT_EXCEEDED",
        "BALANCE_LIMIT_EXCEEDED",
        "FUNDED_BY_PARENT",
      ],
    },
  ),
  reverse: route.post("/v1/transactions/reverse", "Reverse a transaction (refund, correction)", {
    operationId: "reverseTransaction",
    description:
      "Books a reversal of a transaction: a new transaction of the opposite type whose " +
      "`reversalOf` is the original, which is never changed. `amount` defaults to what is still " +
      "reversible. A debit's reversal gives the credits back to the grants it drew from (last " +
      "drawn first, keeping their priority and expiry; a part whose grant has expired is " +
      "expired again at once) and stops counting as spending in the original's window; a " +
      "credit's reversal takes the credits back from its grant, at most its `remaining` and " +
      "the account's `available`. Expiries, transfers and reversals are not reversible.",
    body: reverseTransactionBody,
    ok: reverseTransactionResponse,
    errors: [
      "TRANSACTION_NOT_FOUND",
      "NOT_REVERSIBLE",
      "REVERSAL_EXCEEDS_ORIGINAL",
      "REVERSAL_EXCEEDS_REMAINING",
      "BALANCE_LIMIT_EXCEEDED",
      "FUNDED_BY_PARENT",
    ],
  }),
}));

type Routes = typeof transactionRoutes;

/** `GET /v1/transactions`: one page of ledger entries, with the audit data `include` asks for. */
export function listTransactionsHandler(deps: AppDeps): RouteHandler<Routes["list"], AppEnv> {
  const route = transactionRoutes.list;
  return async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { filter } = await transactionFilterOf(deps.db.read, projectId, q);
    const { rows, pagination } = await paged(q, (page) =>
      listTransactions(deps.db.read, projectId, { ...filter, ...page }),
    );
    const parts = new Set((q.include ?? "").split(",").map((p) => p.trim()));
    const include = { reservation: parts.has("reservation"), usage: parts.has("usage") };
    const [audit, reversed] = await Promise.all([
      readAuditData(deps.db.read, rows, include, deps.clock()),
      reversedAmounts(deps.db.read, rows),
    ]);
    const items = rows.map((row) => transactionItemJson(row, audit, reversed.get(row.id) ?? 0));
    return ok(c, route, { items, pagination });
  };
}

/** `GET /v1/transactions/export`: the list's entries as a streamed CSV or NDJSON file. */
export function exportTransactionsHandler(deps: AppDeps): RouteHandler<Routes["export"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { filter, account } = await transactionFilterOf(deps.db.read, projectId, q);
    const filename = exportFilename("transactions", account?.id, q.format, deps.clock());
    const source = await transactionExport(deps.db.read, projectId, filter, {
      format: q.format,
      filename,
    });
    return exportResponse(c, deps, source);
  };
}

/** The 200 body of a manual transaction that stored `row`. */
function createdTransaction(row: PostedEntry) {
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
  return { success: true as const, transaction, ...(grantId === undefined ? {} : { grantId }) };
}

/** The write unit of `POST /v1/transactions/create`: a credit (with its grant) or a debit. */
export async function createTransactionUnit(input: WriteInput<Routes["create"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const grant = body.type === "credit" ? grantTerms(body, nowMs) : undefined;
  const { row } = await moveCredits(trx, projectId, { ...manual(body), grant }, nowMs);
  return reply(createdTransaction(row));
}

/** The plain path of `POST /v1/transactions/create`: a debit's; a credit makes a grant and has none. */
export const plainCreateTransaction: WriteRouteOptions<Routes["create"]>["plain"] = ({
  body,
  projectId,
  reply,
}) => {
  const input = manual(body);
  return input.type === "debit"
    ? mapPlain(plainDebit(debitOf(projectId, input)), ({ row }) => reply(createdTransaction(row)))
    : undefined;
};

/** The write unit of `POST /v1/transactions/reverse` (src/ledger/reversal.ts). */
export async function reverseTransactionUnit(input: WriteInput<Routes["reverse"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const done = await reverseTransaction(
    trx,
    projectId,
    {
      transactionId: body.transactionId,
      amountMicros: body.amount,
      description: body.description,
      metadata: body.metadata,
    },
    nowMs,
  );
  const { reservation: _r, usage: _u, ...transaction } = transactionJson(done.row);
  return reply({
    success: true as const,
    transaction,
    reversedTransactionId: done.original.id,
    amountReversed: fromMicros(done.amountReversedMicros),
    reversible: fromMicros(done.reversibleMicros),
    balance: fromMicros(done.balanceMicros),
    available: fromMicros(done.availableMicros),
  });
}

/** Registers the transaction routes' handlers on `app`. */
export function registerTransactionRoutes(app: App, deps: AppDeps): void {
  const r = transactionRoutes;
  app.openapi(r.list, listTransactionsHandler(deps));
  app.openapi(r.export, exportTransactionsHandler(deps));
  writeRoute(app, deps, r.create, createTransactionUnit, { plain: plainCreateTransaction });
  writeRoute(app, deps, r.reverse, reverseTransactionUnit);
}
