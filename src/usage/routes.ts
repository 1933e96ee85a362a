/** Routes of docs/api.md#endpoints: record usage, list usage records, and the usage summary. */
import type { z } from "@hono/zod-openapi";
import { mapPlain } from "../db/write-path.ts";
import { csvLine } from "../exports/csv.ts";
import { exportFilename, exportResponse } from "../exports/stream.ts";
import type { App, AppDeps } from "../http/context.ts";
import { ex } from "../http/examples.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { stringifyJson } from "../json.ts";
import { ExactDecimal, fromMicros } from "../money.ts";
import { type ChargedUsage, chargeUsage } from "./charge.ts";
import { USAGE_CSV_COLUMNS, usageExport } from "./export.ts";
import { plainCharge } from "./plain-charge.ts";
import {
  usageRecordExample as exampleUsageRecord,
  exportUsageQuery,
  recordBody,
  recordResponse,
  usageQuery,
  usageRecordJson,
  usageResponse,
} from "./schemas.ts";
import {
  listUsage,
  type RecordUsageInput,
  recordUsage,
  usageFilterOf,
  withReversals,
} from "./service.ts";
import { summarizeUsage } from "./summary.ts";

/** The usage routes. */
export const usageRoutes = resourceRoutes("Usage", (route) => ({
  record: route.post(
    "/v1/usage/record",
    "Record LLM usage; the cost is computed from the model's current prices",
    {
      operationId: "recordUsage",
      description:
        "Records one LLM call of a catalog model, costed exactly at its current prices " +
        "(`cachedTokens` are part of `inputTokens`). By default it moves no credits; " +
        "`transactionId` links it to the debit that paid for it. With `deduct: true` it also " +
        "debits the usage's credit cost (USD cost × the project's `creditsPerUsd`, rounded up " +
        "to the micro-credit) as a deduction, in the same transaction, and answers " +
        "`creditsCharged`, `transactionId` and `balance`; when the credits fall short the " +
        "answer is 402 and nothing is recorded.",
      body: recordBody,
      ok: recordResponse,
      errors: [
        "ACCOUNT_NOT_FOUND",
        "MODEL_NOT_FOUND",
        "TRANSACTION_NOT_FOUND",
        "INSUFFICIENT_CREDITS",
        "SPEND_LIMIT_EXCEEDED",
      ],
    },
  ),
  list: route.get(
    "/v1/usage",
    "List usage records, newest first, or their summary with summary=true (grouped with groupBy)",
    {
      operationId: "listUsage",
      description:
        "Lists usage records filtered by account, model, context and dates, or with " +
        "`summary=true` answers their exact totals, by context and by model; `groupBy=day`, " +
        "`model`, `account` or `context` adds the same records summed per group. A charged " +
        "record shows `creditsReversed`, what the reversals of its debit add up to; " +
        "summaries and their groups sum it beside `creditsCharged`.",
      query: usageQuery,
      ok: usageResponse,
      errors: ["ACCOUNT_NOT_FOUND"],
    },
  ),
  export: route.download(
    "/v1/usage/export",
    "Export usage records, oldest first, as CSV or NDJSON",
    {
      operationId: "exportUsage",
      description:
        "Streams every usage record the list's filters select (account, `modelId`, " +
        "`context`, `startDate`, `endDate`), oldest first, without paging: `format=csv` " +
        "(default; RFC 4180, formula-safe; the columns end `creditsCharged, creditsReversed`) " +
        "or `format=ndjson` (each line the list's item). " +
        "Records committed after the export began are not in it.",
      query: exportUsageQuery,
      csvExample:
        csvLine(USAGE_CSV_COLUMNS) +
        csvLine([
          exampleUsageRecord.id,
          exampleUsageRecord.createdAt,
          exampleUsageRecord.context,
          exampleUsageRecord.accountId,
          ex.externalId,
          exampleUsageRecord.modelId,
          exampleUsageRecord.usageType,
          exampleUsageRecord.inputTokens,
          exampleUsageRecord.cachedTokens,
          exampleUsageRecord.outputTokens,
          new ExactDecimal(String(exampleUsageRecord.estimatedCostUsd)),
          exampleUsageRecord.transactionId,
          new ExactDecimal(String(exampleUsageRecord.creditsCharged)),
          new ExactDecimal(String(exampleUsageRecord.creditsReversed)),
        ]),
      ndjsonExample: `${stringifyJson(exampleUsageRecord)}\n`,
      errors: ["ACCOUNT_NOT_FOUND"],
    },
  ),
}));

/** The validated body of `POST /v1/usage/record`. */
type RecordBody = z.output<typeof recordBody>;

/** The record a body asks for, with its defaults (context customer, usage type text). */
function recordInput(body: RecordBody): RecordUsageInput {
  return {
    context: body.context ?? "customer",
    accountRef: body.accountId,
    modelId: body.modelId,
    usageType: body.usageType ?? "text",
    inputTokens: body.inputTokens,
    outputTokens: body.outputTokens,
    cachedTokens: body.cachedTokens ?? 0,
    transactionId: body.transactionId,
    metadata: body.metadata,
  };
}

/** The 200 body of a `deduct: true` record (docs/api.md#charging-usage-in-credits). */
function chargedBody(charged: ChargedUsage) {
  return {
    success: true as const,
    usageRecord: usageRecordJson(charged.row),
    creditsCharged: fromMicros(charged.creditsChargedMicros),
    transactionId: charged.transactionId,
    balance: fromMicros(charged.balanceMicros),
  };
}

export function registerUsageRoutes(app: App, deps: AppDeps): void {
  const r = usageRoutes;
  writeRoute(
    app,
    deps,
    r.record,
    async ({ trx, nowMs, body, projectId, reply }) => {
      const input = recordInput(body);
      if (body.deduct !== true) {
        const row = await recordUsage(trx, projectId, input, nowMs);
        return reply({ success: true, usageRecord: usageRecordJson(row) });
      }
      return reply(chargedBody(await chargeUsage(trx, projectId, input, nowMs)));
    },
    {
      plain: ({ body, projectId, reply }) =>
        body.deduct === true
          ? mapPlain(plainCharge(projectId, recordInput(body)), (done) => reply(chargedBody(done)))
          : undefined,
    },
  );

  app.openapi(r.export, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const filter = await usageFilterOf(deps.db.read, projectId, q);
    const filename = exportFilename("usage", filter.accountId, q.format, deps.clock());
    const source = await usageExport(deps.db.read, projectId, filter, {
      format: q.format,
      filename,
    });
    return exportResponse(c, deps, source);
  });

  app.openapi(r.list, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const filter = await usageFilterOf(deps.db.read, projectId, q);
    if (q.summary) {
      const summary = await summarizeUsage(deps.db.read, projectId, filter, q.groupBy);
      return ok(c, r.list, { success: true, summary });
    }
    const { rows, pagination } = await paged(q, (page) =>
      listUsage(deps.db.read, projectId, { ...filter, ...page }),
    );
    // What the page's charges have had reversed: one grouped query for the whole page.
    const usageRecords = (await withReversals(deps.db.read, rows)).map(usageRecordJson);
    return ok(c, r.list, { success: true, usageRecords, pagination });
  });
}
