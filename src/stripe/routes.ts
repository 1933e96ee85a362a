/**
 * Stripe's routes (docs/api.md#selling-credits-through-stripe): `POST
 * /stripe/webhooks/{projectId}`, where Stripe posts a connected project's events (no API key; the
 * signature over the raw body is checked before anything is read), and the API's lists of
 * purchases and of the events received.
 */
import type { RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { resolveAccount } from "../accounts/service.ts";
import { ApiError } from "../errors.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { paged } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { invoicePaymentIntent, stripeClient, verifiedEvent } from "./api.ts";
import { ingestEvent, withIntent } from "./ingest.ts";
import { type EventFact, factOf } from "./objects.ts";
import { listPurchases, listStripeEvents } from "./reads.ts";
import {
  listPurchasesQuery,
  listPurchasesResponse,
  listStripeEventsQuery,
  listStripeEventsResponse,
} from "./schemas.ts";
import { readConnection } from "./settings.ts";

/** The largest Stripe event body accepted: 1 MiB (Stripe's events are far smaller). */
export const STRIPE_BODY_LIMIT_BYTES = 1024 * 1024;

/** The API's Stripe routes. */
export const stripeRoutes = resourceRoutes("Stripe", (route) => ({
  purchases: route.get("/v1/purchases", "List purchases made through Stripe", {
    operationId: "listPurchases",
    description:
      "The project's purchases, newest first, or one account's (`accountId` or `externalId`): " +
      "each Stripe payment that granted credits, with what its refunds and disputes took back " +
      "(`creditsClawedBack`) and could not (`creditsUncollected`).",
    query: listPurchasesQuery,
    ok: listPurchasesResponse,
    errors: ["ACCOUNT_NOT_FOUND"],
  }),
  events: route.get("/v1/stripe/events", "List the Stripe events received", {
    operationId: "listStripeEvents",
    description:
      "Every Stripe event the project accepted, once by its id, newest first, with its " +
      "deliveries and outcome: `applied`, `duplicate` (another event of the same payment " +
      "already did it), `pending` (a refund or dispute waiting for its payment's grant) or " +
      "`ignored` (with its `reason`).",
    query: listStripeEventsQuery,
    ok: listStripeEventsResponse,
  }),
}));

type Routes = typeof stripeRoutes;

/** `GET /v1/purchases`. */
function listPurchasesHandler(deps: AppDeps): RouteHandler<Routes["purchases"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const named = q.accountId !== undefined || q.externalId !== undefined;
    const account = named ? await resolveAccount(deps.db.read, projectId, q) : undefined;
    const { rows, pagination } = await paged(q, (page) =>
      listPurchases(deps.db.read, projectId, account?.id, page),
    );
    return ok(c, stripeRoutes.purchases, { success: true, purchases: rows, pagination });
  };
}

/** `GET /v1/stripe/events`. */
function listEventsHandler(deps: AppDeps): RouteHandler<Routes["events"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const { rows, pagination } = await paged(q, (page) =>
      listStripeEvents(deps.db.read, c.get("projectId"), page),
    );
    return ok(c, stripeRoutes.events, { success: true, events: rows, pagination });
  };
}

/**
 * `POST /stripe/webhooks/{projectId}`: 404 for a project that does not exist or is not
 * connected; the signature checked over the raw body (400 INVALID_SIGNATURE); an invoice's
 * PaymentIntent read with the project's secret key when the invoice does not carry it; then the
 * event recorded and applied in one write unit, answered 200 once committed (503 while the
 * database cannot write, or Stripe's API cannot be read: Stripe retries).
 */
function stripeWebhookHandler(deps: AppDeps) {
  return async (c: Context<AppEnv>) => {
    const connection = await readConnection(deps.db.read, c.req.param("projectId") ?? "");
    if (connection === null) {
      throw new ApiError("NOT_FOUND", "No project connected to Stripe has this id");
    }
    const payload = await c.req.text();
    const event = await verifiedEvent(
      payload,
      c.req.header("stripe-signature"),
      connection.webhookSecret,
      deps.clock(),
    );
    let fact: EventFact = factOf(event);
    if (fact.kind === "invoice_without_intent") {
      const { secretKey } = connection;
      let pi: string | null = null;
      if (secretKey !== null) {
        try {
          pi = await invoicePaymentIntent(
            stripeClient(secretKey, deps.config.STRIPE_API_URL, { timeoutMs: 5000, retries: 0 }),
            fact.invoiceId,
          );
        } catch {
          throw new ApiError("SERVICE_UNAVAILABLE", "Stripe's API could not be read; retry later");
        }
      }
      fact =
        pi !== null
          ? withIntent(fact.payment, pi)
          : {
              kind: "ignored",
              reason:
                secretKey === null
                  ? "invoice_payment_unknown_without_secret_key"
                  : "invoice_not_paid",
              paymentIntentId: null,
            };
    }
    const known = fact;
    const done = await deps.queue.run((trx, nowMs) =>
      ingestEvent(trx, connection, event, known, nowMs),
    );
    return c.json(
      {
        success: true,
        eventId: done.eventId,
        outcome: done.outcome,
        reason: done.reason,
        purchaseId: done.purchaseId,
      },
      200,
    );
  };
}

/** Registers the Stripe routes on `app`. */
export function registerStripeRoutes(app: App, deps: AppDeps): void {
  app.openapi(stripeRoutes.purchases, listPurchasesHandler(deps));
  app.openapi(stripeRoutes.events, listEventsHandler(deps));
  app.post(
    "/stripe/webhooks/:projectId",
    bodyLimit({
      maxSize: STRIPE_BODY_LIMIT_BYTES,
      onError: () => {
        throw new ApiError(
          "PAYLOAD_TOO_LARGE",
          `Request body is larger than ${STRIPE_BODY_LIMIT_BYTES} bytes`,
        );
      },
    }),
    stripeWebhookHandler(deps),
  );
}
