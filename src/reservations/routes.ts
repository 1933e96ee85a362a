/** Routes of docs/api.md#endpoints: create, list, confirm and cancel reservations. */
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { pagination } from "../http/schemas.ts";
import { fromMicros } from "../money.ts";
import {
  cancelReservationBody,
  cancelReservationResponse,
  confirmReservationBody,
  confirmReservationResponse,
  createReservationBody,
  createReservationResponse,
  listReservationsQuery,
  listReservationsResponse,
} from "./schemas.ts";
import {
  cancelReservation,
  confirmReservation,
  createReservation,
  listReservations,
  reservationJson,
} from "./service.ts";

const route = resourceRoutes("Reservations");

const createRoute_ = route.post(
  "/v1/reservations/create",
  "Hold credits before an expensive operation",
  {
    body: createReservationBody,
    ok: createReservationResponse,
    errors: ["ACCOUNT_NOT_FOUND", "INSUFFICIENT_CREDITS"],
  },
);

const listRoute = route.get("/v1/reservations", "List an account's reservations, newest first", {
  query: listReservationsQuery,
  ok: listReservationsResponse,
  errors: ["ACCOUNT_NOT_FOUND"],
});

const confirmRoute = route.post(
  "/v1/reservations/confirm",
  "Settle a reservation with the actual amount",
  {
    body: confirmReservationBody,
    ok: confirmReservationResponse,
    errors: ["RESERVATION_NOT_FOUND", "RESERVATION_NOT_PENDING", "INSUFFICIENT_CREDITS"],
  },
);

const cancelRoute = route.post("/v1/reservations/cancel", "Release a reservation", {
  body: cancelReservationBody,
  ok: cancelReservationResponse,
  errors: ["RESERVATION_NOT_FOUND", "RESERVATION_NOT_PENDING"],
});

/** The reservation routes. */
export const reservationRoutes = {
  create: createRoute_,
  list: listRoute,
  confirm: confirmRoute,
  cancel: cancelRoute,
};

export function registerReservationRoutes(app: App, deps: AppDeps): void {
  app.openapi(createRoute_, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, createRoute_, async (trx, nowMs, reply) => {
      const row = await createReservation(
        trx,
        projectId,
        {
          accountRef: body.accountId,
          amountMicros: body.amount,
          operation: body.operation,
          model: body.model,
          ttlSeconds: body.ttlSeconds ?? deps.config.RESERVATION_TTL_SECONDS,
          metadata: body.metadata,
        },
        nowMs,
      );
      return reply({ success: true, reservation: reservationJson(row, nowMs) });
    });
  });

  app.openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    const account = await resolveAccount(deps.db.read, c.get("projectId"), q);
    const nowMs = deps.clock();
    const page = { limit: q.limit, offset: q.offset };
    const { rows, totalCount } = await listReservations(deps.db.read, account.id, {
      activeOnly: q.activeOnly ?? false,
      ...page,
      nowMs,
    });
    return ok(c, listRoute, {
      success: true,
      reservations: rows.map((r) => reservationJson(r, nowMs)),
      pagination: pagination(page, rows.length, totalCount),
    });
  });

  app.openapi(confirmRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, confirmRoute, async (trx, nowMs, reply) => {
      const actual = body.actualAmount;
      const { hold, transaction, balanceMicros } = await confirmReservation(
        trx,
        projectId,
        body.reservationId,
        actual,
        nowMs,
      );
      return reply({
        success: true,
        reservationId: hold.id,
        transactionId: transaction.id,
        reservedAmount: fromMicros(hold.amount_micros),
        actualAmount: fromMicros(actual),
        balance: fromMicros(balanceMicros),
        amountReleased: fromMicros(Math.max(0, hold.amount_micros - actual)),
      });
    });
  });

  app.openapi(cancelRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, cancelRoute, async (trx, nowMs, reply) => {
      const hold = await cancelReservation(trx, projectId, body.reservationId, nowMs);
      return reply({
        success: true,
        reservationId: hold.id,
        amountReleased: fromMicros(hold.amount_micros),
        accountId: hold.account_id,
      });
    });
  });
}
