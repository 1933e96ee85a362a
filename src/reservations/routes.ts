/** Routes of docs/api.md#endpoints: create, list, confirm and cancel reservations. */
import { accountPage } from "../accounts/pages.ts";
import type { App, AppDeps } from "../http/context.ts";
import { writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
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
  reservationJson,
} from "./schemas.ts";
import {
  cancelReservation,
  confirmReservation,
  createReservation,
  listReservations,
} from "./service.ts";

/** The reservation routes. */
export const reservationRoutes = resourceRoutes("Reservations", (route) => ({
  list: route.get("/v1/reservations", "List an account's reservations, newest first", {
    query: listReservationsQuery,
    ok: listReservationsResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
  create: route.post("/v1/reservations/create", "Hold credits before an expensive operation", {
    body: createReservationBody,
    ok: createReservationResponse,
    errors: ["ACCOUNT_NOT_FOUND", "INSUFFICIENT_CREDITS"],
  }),
  confirm: route.post("/v1/reservations/confirm", "Settle a reservation with the actual amount", {
    body: confirmReservationBody,
    ok: confirmReservationResponse,
    errors: ["RESERVATION_NOT_FOUND", "RESERVATION_NOT_PENDING", "INSUFFICIENT_CREDITS"],
  }),
  cancel: route.post("/v1/reservations/cancel", "Release a reservation", {
    body: cancelReservationBody,
    ok: cancelReservationResponse,
    errors: ["RESERVATION_NOT_FOUND", "RESERVATION_NOT_PENDING"],
  }),
}));

export function registerReservationRoutes(app: App, deps: AppDeps): void {
  const r = reservationRoutes;
  writeRoute(app, deps, r.create, async ({ trx, nowMs, body, projectId, reply }) => {
    const hold = {
      accountRef: body.accountId,
      amountMicros: body.amount,
      operation: body.operation,
      model: body.model,
      ttlSeconds: body.ttlSeconds ?? deps.config.RESERVATION_TTL_SECONDS,
      metadata: body.metadata,
    };
    const row = await createReservation(trx, projectId, hold, nowMs);
    return reply({ success: true, reservation: reservationJson(row, nowMs) });
  });

  app.openapi(r.list, async (c) => {
    const q = c.req.valid("query");
    const { rows, pagination, nowMs } = await accountPage(
      deps,
      c.get("projectId"),
      q,
      listReservations,
    );
    const reservations = rows.map((row) => reservationJson(row, nowMs));
    return ok(c, r.list, { success: true, reservations, pagination });
  });

  writeRoute(app, deps, r.confirm, async ({ trx, nowMs, body, projectId, reply }) => {
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

  writeRoute(app, deps, r.cancel, async ({ trx, nowMs, body, projectId, reply }) => {
    const hold = await cancelReservation(trx, projectId, body.reservationId, nowMs);
    return reply({
      success: true,
      reservationId: hold.id,
      amountReleased: fromMicros(hold.amount_micros),
      accountId: hold.account_id,
    });
  });
}
