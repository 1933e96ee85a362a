/** Routes of docs/api.md#endpoints: record usage, list usage records, and the usage summary. */
import { resolveAccount } from "../accounts/service.ts";
import { dateRangeMs } from "../dates.ts";
import type { App, AppDeps } from "../http/context.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { fromMicros } from "../money.ts";
import { chargeUsage } from "./charge.ts";
import {
  recordBody,
  recordResponse,
  usageQuery,
  usageRecordJson,
  usageResponse,
} from "./schemas.ts";
import { listUsage, recordUsage } from "./service.ts";
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
        "`model`, `account` or `context` adds the same records summed per group.",
      query: usageQuery,
      ok: usageResponse,
      errors: ["ACCOUNT_NOT_FOUND"],
    },
  ),
}));

export function registerUsageRoutes(app: App, deps: AppDeps): void {
  const r = usageRoutes;
  writeRoute(app, deps, r.record, async ({ trx, nowMs, body, projectId, reply }) => {
    const input = {
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
    if (body.deduct !== true) {
      const row = await recordUsage(trx, projectId, input, nowMs);
      return reply({ success: true, usageRecord: usageRecordJson(row) });
    }
    const charged = await chargeUsage(trx, projectId, input, nowMs);
    return reply({
      success: true,
      usageRecord: usageRecordJson(charged.row),
      creditsCharged: fromMicros(charged.creditsChargedMicros),
      transactionId: charged.transactionId,
      balance: fromMicros(charged.balanceMicros),
    });
  });

  app.openapi(r.list, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { startMs, endMs } = dateRangeMs(q.startDate, q.endDate);
    const account =
      q.accountId === undefined && q.externalId === undefined
        ? undefined
        : await resolveAccount(deps.db.read, projectId, q);
    const filter = {
      accountId: account?.id,
      modelId: q.modelId,
      context: q.context,
      startMs,
      endMs,
    };
    if (q.summary) {
      const summary = await summarizeUsage(deps.db.read, projectId, filter, q.groupBy);
      return ok(c, r.list, { success: true, summary });
    }
    const { rows, pagination } = await paged(q, (page) =>
      listUsage(deps.db.read, projectId, { ...filter, ...page }),
    );
    return ok(c, r.list, { success: true, usageRecords: rows.map(usageRecordJson), pagination });
  });
}
