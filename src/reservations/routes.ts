/** Routes of docs/api.md#endpoints: create, list, confirm and cancel reservations. */
import type { RouteHandler, z } from "@hono/zod-openapi";
import { accountPage } from "../accounts/pages.ts";
import { mapPlain } from "../db/write-path.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { type WriteInput, type WriteRouteOptions, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { newId } from "../ids.ts";
import { fromMicros } from "../money.ts";
import { usageRecordJson } from "../usage/schemas.ts";
import { confirmWithUsage } from "./confirm-usage.ts";
import { plainConfirm } from "./plain-confirm.ts";
import { plainReserve } from "./plain-reserve.ts";
import {
  cancelReservationBody,
  cancelReservationResponse,
  confirmReservationBody,
  confirmReservationResponse,
  createReservationBody,
  createReservationResponse,
  listReservationsQuery,
  listReservationsResponse,
  reservationJson,
} from "./schemas.ts";
import {
  type Confirmed,
  cancelReservation,
  confirmReservation,
  createReservation,
  listReservations,
  newHold,
} from "./service.ts";

/** The reservation routes. */
export const reservationRoutes = resourceRoutes("Reservations", (route) => ({
  list: route.get("/v1/reservations", "List an account's reservations, newest first", {
    operationId: "listReservations",
    description:
      "Lists one account's reservations, newest first (`limit` 1–1,000, default 100); " +
      "`activeOnly=true` keeps the pending, unexpired ones.",
    query: listReservationsQuery,
    ok: listReservationsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
  create: route.post("/v1/reservations/create", "Hold credits before an expensive operation", {
    operationId: "createReservation",
    description:
      "Holds `amount` credits (needs `amount ≤ available`, else 402) for `ttlSeconds` (1–86,400, " +
      "default 900). The hold counts in `reserved` until it is confirmed, cancelled or " +
      "expires; it moves no balance.",
    body: createReservationBody,
    ok: createReservationResponse,
    errors: ["ACCOUNT_NOT_FOUND", "INSUFFICIENT_CREDITS", "SPEND_LIMIT_EXCEEDED"],
  }),
  confirm: route.post("/v1/reservations/confirm", "Settle a reservation with the actual amount", {
    operationId: "confirmReservation",
    description:
      "Debits `actualAmount` (≥ 0) and releases the rest of the hold. An `actualAmount` above " +
      "the hold is debited when the excess fits in `available`, else 402 and the hold stays " +
      "pending. 409 `RESERVATION_NOT_PENDING` once the hold has ended. With `usage` instead " +
      "of `actualAmount` (exactly one of them), the amount is that usage's credit cost (USD " +
      "cost × the project's `creditsPerUsd`, rounded up to the micro-credit) and the usage " +
      "record is written with the debit, in the same transaction; the answer adds " +
      "`usageRecord` and `creditsCharged`.",
    body: confirmReservationBody,
    ok: confirmReservationResponse,
    errors: [
      "RESERVATION_NOT_FOUND",
      "RESERVATION_NOT_PENDING",
      "INSUFFICIENT_CREDITS",
      "SPEND_LIMIT_EXCEEDED",
      "MODEL_NOT_FOUND",
    ],
  }),
  cancel: route.post("/v1/reservations/cancel", "Release a reservation", {
    operationId: "cancelReservation",
    description:
      "Releases the whole hold; no transaction is written. 409 `RESERVATION_NOT_PENDING` " +
      "once the hold has ended.",
    body: cancelReservationBody,
    ok: cancelReservationResponse,
    errors: ["RESERVATION_NOT_FOUND", "RESERVATION_NOT_PENDING"],
  }),
}));

/**
 * The `actualAmount` of a confirm without `usage` (the body's schema requires exactly one).
 * @throws Error when validation let neither through (a bug)
 */
function validatedActual(actualMicros: number | undefined): number {
  if (actualMicros === undefined) throw new Error("confirm without actualAmount or usage");
  return actualMicros;
}

type Routes = typeof reservationRoutes;

/** The hold a create asks for, `ttlSeconds` defaulting to `RESERVATION_TTL_SECONDS`. */
function reservationOf(deps: AppDeps, body: z.output<typeof createReservationBody>) {
  return {
    accountRef: body.accountId,
    amountMicros: body.amount,
    operation: body.operation,
    model: body.model,
    ttlSeconds: body.ttlSeconds ?? deps.config.RESERVATION_TTL_SECONDS,
    metadata: body.metadata,
  };
}

/** The write unit of `POST /v1/reservations/create`. */
export function createReservationUnit(deps: AppDeps) {
  return async ({ trx, nowMs, body, projectId, reply }: WriteInput<Routes["create"]>) => {
    const row = await createReservation(trx, projectId, reservationOf(deps, body), nowMs);
    return reply({ success: true, reservation: reservationJson(row, nowMs) });
  };
}

/** The plain path of `POST /v1/reservations/create` (docs/design.md#plain-writes). */
export function plainCreateReservation(
  deps: AppDeps,
): WriteRouteOptions<Routes["create"]>["plain"] {
  return ({ body, projectId, reply }) => {
    const input = reservationOf(deps, body);
    const id = newId("res");
    return mapPlain(
      plainReserve(input.accountRef, (nowMs) => newHold(projectId, input, id, nowMs)),
      (row) => reply({ success: true, reservation: reservationJson(row, row.created_at_ms) }),
    );
  };
}

/** `GET /v1/reservations`: one page of an account's reservations. */
export function listReservationsHandler(deps: AppDeps): RouteHandler<Routes["list"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const { rows, pagination, nowMs } = await accountPage(
      deps,
      c.get("projectId"),
      q,
      listReservations,
    );
    const reservations = rows.map((row) => reservationJson(row, nowMs));
    return ok(c, reservationRoutes.list, { success: true, reservations, pagination });
  };
}

/** The 200 body of a confirm of `actualMicros`. */
function confirmedBody(actualMicros: number, done: Confirmed) {
  return {
    success: true as const,
    reservationId: done.hold.id,
    transactionId: done.transaction.id,
    reservedAmount: fromMicros(done.hold.amount_micros),
    actualAmount: fromMicros(actualMicros),
    balance: fromMicros(done.balanceMicros),
    amountReleased: fromMicros(Math.max(0, done.hold.amount_micros - actualMicros)),
  };
}

/**
 * The write unit of `POST /v1/reservations/confirm`: the hold settled at `actualAmount`, or at
 * the credit cost of `usage`, whose record it writes (docs/api.md#charging-usage-in-credits).
 */
export async function confirmReservationUnit(input: WriteInput<Routes["confirm"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const { reservationId, usage } = body;
  if (usage !== undefined) {
    const tokens = { ...usage, cachedTokens: usage.cachedTokens ?? 0 };
    const charged = await confirmWithUsage(
      trx,
      projectId,
      reservationId,
      { ...tokens, usageType: usage.usageType ?? "text" },
      nowMs,
    );
    return reply({
      ...confirmedBody(charged.creditsMicros, charged.done),
      usageRecord: usageRecordJson(charged.row),
      creditsCharged: fromMicros(charged.creditsMicros),
    });
  }
  const actual = validatedActual(body.actualAmount);
  const done = await confirmReservation(trx, projectId, reservationId, actual, nowMs);
  return reply(confirmedBody(actual, done));
}

/**
 * The plain path of `POST /v1/reservations/confirm`: a confirm of an `actualAmount`. A confirm
 * with usage prices it and writes its record in the unit, so it has none.
 */
export const plainConfirmReservation: WriteRouteOptions<Routes["confirm"]>["plain"] = ({
  body,
  projectId,
  reply,
}) => {
  const actual = body.actualAmount;
  if (actual === undefined) return undefined;
  return mapPlain(plainConfirm(projectId, body.reservationId, actual), (done) =>
    reply(confirmedBody(actual, done)),
  );
};

/** The write unit of `POST /v1/reservations/cancel`: the whole hold released. */
export async function cancelReservationUnit(input: WriteInput<Routes["cancel"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const hold = await cancelReservation(trx, projectId, body.reservationId, nowMs);
  return reply({
    success: true,
    reservationId: hold.id,
    amountReleased: fromMicros(hold.amount_micros),
    accountId: hold.account_id,
  });
}

/** Registers the reservation routes' handlers on `app`. */
export function registerReservationRoutes(app: App, deps: AppDeps): void {
  const r = reservationRoutes;
  writeRoute(app, deps, r.create, createReservationUnit(deps), {
    plain: plainCreateReservation(deps),
  });
  app.openapi(r.list, listReservationsHandler(deps));
  writeRoute(app, deps, r.confirm, confirmReservationUnit, { plain: plainConfirmReservation });
  writeRoute(app, deps, r.cancel, cancelReservationUnit);
}
