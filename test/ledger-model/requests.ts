/**
 * The requests of the ledger model test's operations (ops.ts): the path and the body each sends,
 * alone or as a batch operation, amounts as exact literals; and each operation as a log line.
 */
import { LosslessNumber } from "lossless-json";
import { amount as lit } from "./exact.ts";
import type { Limit } from "./model.ts";
import type { Op, Usage } from "./ops.ts";

/** A request's path and body (amounts as exact literals). */
export interface Request {
  path: string;
  body: Record<string, unknown>;
}

const usageBody = (u: Usage) => ({
  modelId: u.modelId,
  inputTokens: u.inputTokens,
  cachedTokens: u.cachedTokens,
  outputTokens: u.outputTokens,
});

const limitsBody = (limits: Limit[]) =>
  limits.map((l) => ({
    period: l.period,
    amount: lit(l.amount),
    timeZone: l.timeZone,
    soft: l.soft,
  }));

/** The request of `op`; `holdId` names a hold by its model key. */
export function requestOf(op: Op, holdId: (key: number | null) => string): Request {
  const amount: LosslessNumber | undefined = "amount" in op ? lit(op.amount) : undefined;
  switch (op.kind) {
    case "add": {
      const terms = {
        ...(op.priority === undefined ? {} : { priority: op.priority }),
        ...(op.expiresAt === undefined ? {} : { expiresAt: new Date(op.expiresAt).toISOString() }),
      };
      return op.manual
        ? {
            path: "/v1/transactions/create",
            body: { accountId: op.ext, type: "credit", amount, ...terms },
          }
        : { path: "/v1/accounts/credits/add", body: { accountId: op.ext, amount, ...terms } };
    }
    case "debit":
      return op.manual
        ? { path: "/v1/transactions/create", body: { accountId: op.ext, type: "debit", amount } }
        : { path: "/v1/accounts/credits/deduct", body: { accountId: op.ext, amount } };
    case "reserve":
      return {
        path: "/v1/reservations/create",
        body: {
          accountId: op.ext,
          amount,
          ttlSeconds: op.ttlSeconds,
          operation: "model-test",
          model: "gpt-5",
        },
      };
    case "confirm":
      return {
        path: "/v1/reservations/confirm",
        body: { reservationId: holdId(op.hold), actualAmount: lit(op.actual) },
      };
    case "confirmUsage":
      return {
        path: "/v1/reservations/confirm",
        body: { reservationId: holdId(op.hold), usage: usageBody(op.usage) },
      };
    case "cancel":
      return { path: "/v1/reservations/cancel", body: { reservationId: holdId(op.hold) } };
    case "charge":
      return {
        path: "/v1/usage/record",
        body: { accountId: op.ext, context: "customer", deduct: true, ...usageBody(op.usage) },
      };
    case "update":
      return {
        path: "/v1/accounts/update",
        body: {
          accountId: op.ext,
          ...(op.threshold === undefined
            ? {}
            : { lowBalanceThreshold: op.threshold === null ? null : lit(op.threshold) }),
          ...(op.limits === undefined ? {} : { spendLimits: limitsBody(op.limits) }),
        },
      };
    case "invalid":
      // Seven decimals: a 400 whatever the account holds (contract section 1).
      return {
        path: "/v1/accounts/credits/deduct",
        body: { accountId: op.ext, amount: new LosslessNumber("1.0000001") },
      };
  }
}

/** `op` in a log line. */
export function describe(op: Op, c: (micros: number) => string): string {
  switch (op.kind) {
    case "add":
      return `${op.manual ? "credit" : "add"} ${op.ext} ${c(op.amount)} p${op.priority ?? "-"} exp ${op.expiresAt === undefined ? "-" : new Date(op.expiresAt).toISOString()}`;
    case "debit":
      return `${op.manual ? "debit" : "deduct"} ${op.ext} ${c(op.amount)}`;
    case "reserve":
      return `reserve ${op.ext} ${c(op.amount)} ttl ${op.ttlSeconds}s`;
    case "confirm":
      return `confirm #${op.hold} actual ${c(op.actual)}`;
    case "confirmUsage":
      return `confirm #${op.hold} usage ${JSON.stringify(op.usage)}`;
    case "cancel":
      return `cancel #${op.hold}`;
    case "charge":
      return `charge ${op.ext} ${JSON.stringify(op.usage)}`;
    case "update":
      return `update ${op.ext} threshold ${op.threshold === undefined ? "-" : op.threshold === null ? "null" : c(op.threshold)} limits ${op.limits === undefined ? "-" : JSON.stringify(op.limits)}`;
    case "invalid":
      return `deduct ${op.ext} 1.0000001 (invalid)`;
  }
}
