/**
 * Routes of docs/api.md#webhook-endpoints: create (its target checked before the write unit),
 * list, update (pause and resume), a new secret (create and rotate-secret are the only answers
 * with a secret), the test event, delete, the delivery log of one endpoint and a new attempt
 * of a failed delivery (docs/api.md#managing-webhook-endpoints).
 */
import type { RouteHandler } from "@hono/zod-openapi";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { paged, type WriteInput, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { retryDelivery, rotateSecret, sendTestEvent, updateWebhook } from "./manage.ts";
import {
  createWebhookBody,
  createWebhookResponse,
  deleteWebhookBody,
  deleteWebhookResponse,
  deliveriesQuery,
  deliveryJson,
  listDeliveriesResponse,
  listWebhooksQuery,
  listWebhooksResponse,
  retryDeliveryBody,
  retryDeliveryResponse,
  rotateSecretResponse,
  testWebhookResponse,
  updateWebhookBody,
  updateWebhookResponse,
  webhookIdBody,
  webhookJson,
} from "./schemas.ts";
import {
  assertPublicTarget,
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
} from "./service.ts";
import type { TargetPolicy } from "./targets.ts";

/** The routes of the endpoints themselves: create, list, delete, update, rotate-secret. */
const endpointRoutes = resourceRoutes("Webhooks", (route) => ({
  create: route.post(
    "/v1/webhooks/create",
    "Create a webhook endpoint (its signing secret is shown only here)",
    {
      operationId: "createWebhook",
      description:
        "Registers an `http`/`https` URL of a public address that receives the project's events " +
        "of the types in `events` (default: all), signed as Standard Webhooks. The `secret` that " +
        "verifies the signatures is in this answer only. At most `WEBHOOK_MAX_PER_PROJECT` " +
        "(default 50) endpoints per project.",
      body: createWebhookBody,
      ok: createWebhookResponse,
      errors: ["WEBHOOK_LIMIT_REACHED"],
    },
  ),
  list: route.get("/v1/webhooks", "List the project's webhook endpoints (without secrets)", {
    operationId: "listWebhooks",
    description:
      "Lists the project's active webhook endpoints, oldest first, without secrets, a page at a time.",
    query: listWebhooksQuery,
    ok: listWebhooksResponse,
  }),
  delete: route.post(
    "/v1/webhooks/delete",
    "Delete a webhook endpoint and stop every delivery to it",
    {
      operationId: "deleteWebhook",
      description:
        "Removes the endpoint from the list; no new event is sent to it and its pending " +
        "deliveries end as `failed`.",
      body: deleteWebhookBody,
      ok: deleteWebhookResponse,
      errors: ["WEBHOOK_NOT_FOUND"],
    },
  ),
  update: route.post("/v1/webhooks/update", "Change, pause or resume a webhook endpoint", {
    operationId: "updateWebhook",
    description:
      "Changes the fields given: `url` (checked like a new one), `events` (replaces the " +
      "subscription), `description`, `isActive`. `isActive: false` pauses delivery: events " +
      "are still queued for the endpoint and due deliveries wait; `isActive: true` resumes, " +
      "and every waiting delivery is sent.",
    body: updateWebhookBody,
    ok: updateWebhookResponse,
    errors: ["WEBHOOK_NOT_FOUND"],
  }),
  rotateSecret: route.post(
    "/v1/webhooks/rotate-secret",
    "Give a webhook endpoint a new signing secret",
    {
      operationId: "rotateWebhookSecret",
      description:
        "Replaces the endpoint's secret and answers the endpoint with the new `secret` (shown " +
        "only here). The old secret signs nothing from then on.",
      body: webhookIdBody,
      ok: rotateSecretResponse,
      errors: ["WEBHOOK_NOT_FOUND"],
    },
  ),
}));

/** The routes of an endpoint's deliveries: the test event, the delivery log, a retry. */
const deliveryRoutes = resourceRoutes("Webhooks", (route) => ({
  deliveries: route.get("/v1/webhooks/deliveries", "An endpoint's deliveries, newest first", {
    operationId: "listWebhookDeliveries",
    description:
      "Lists one endpoint's deliveries, newest first, with their `status` (`pending`, " +
      "`delivered` or `failed`), `attempts`, last answer and next attempt. A deleted " +
      "endpoint's deliveries stay listed until retention removes them.",
    query: deliveriesQuery,
    ok: listDeliveriesResponse,
    errors: ["WEBHOOK_NOT_FOUND"],
  }),
  test: route.post("/v1/webhooks/test", "Send a test event to a webhook endpoint", {
    operationId: "testWebhook",
    description:
      "Queues a `webhook.test` event (`data: {webhookId}`) for this endpoint alone, whatever " +
      "it subscribes to, delivered, signed and retried like any other event (a paused " +
      "endpoint gets it once resumed). Answers the event id and its delivery.",
    body: webhookIdBody,
    ok: testWebhookResponse,
    errors: ["WEBHOOK_NOT_FOUND"],
  }),
  retryDelivery: route.post(
    "/v1/webhooks/deliveries/retry",
    "Attempt a failed delivery once more",
    {
      operationId: "retryWebhookDelivery",
      description:
        "Makes a `failed` delivery `pending` again, due at once: one new attempt, signed with " +
        "the endpoint's current secret; if it fails the delivery is `failed` again. A " +
        "pending or delivered delivery is a 409 `DELIVERY_NOT_FAILED`; one of a deleted " +
        "endpoint is a 404 `WEBHOOK_NOT_FOUND`.",
      body: retryDeliveryBody,
      ok: retryDeliveryResponse,
      errors: ["DELIVERY_NOT_FOUND", "WEBHOOK_NOT_FOUND", "DELIVERY_NOT_FAILED"],
    },
  ),
}));

/** The webhook routes, for tests and tools that call them by definition. */
export const webhookRoutes = { ...endpointRoutes, ...deliveryRoutes };

type Routes = typeof webhookRoutes;

/** The target policy of webhook URLs (docs/api.md#webhook-endpoints), from the app's config. */
function targetPolicy(deps: AppDeps): TargetPolicy {
  return {
    allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE,
    ...(deps.resolveHost ? { resolveHost: deps.resolveHost } : {}),
  };
}

/** The write unit of `POST /v1/webhooks/create`: the endpoint, with its secret in the answer. */
export function createWebhookUnit(deps: AppDeps) {
  return async ({ trx, nowMs, body, projectId, reply }: WriteInput<Routes["create"]>) => {
    const max = deps.config.WEBHOOK_MAX_PER_PROJECT;
    const row = await createWebhook(trx, projectId, body, nowMs, max);
    return reply({ success: true, webhook: { ...webhookJson(row), secret: row.secret } });
  };
}

/** `GET /v1/webhooks`: one page of the project's active endpoints. */
export function listWebhooksHandler(deps: AppDeps): RouteHandler<Routes["list"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { rows, pagination } = await paged(q, (page) =>
      listWebhooks(deps.db.read, projectId, page),
    );
    const webhooks = rows.map(webhookJson);
    return ok(c, webhookRoutes.list, { success: true, webhooks, pagination });
  };
}

/** The write unit of `POST /v1/webhooks/delete`. */
export async function deleteWebhookUnit(input: WriteInput<Routes["delete"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  await deleteWebhook(trx, projectId, body.webhookId, nowMs);
  return reply({ success: true, webhookId: body.webhookId });
}

/** The write unit of `POST /v1/webhooks/update` (a new `url` checked first, by `check`). */
export async function updateWebhookUnit(input: WriteInput<Routes["update"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const row = await updateWebhook(trx, projectId, body, nowMs);
  return reply({ success: true, webhook: webhookJson(row) });
}

/** The write unit of `POST /v1/webhooks/rotate-secret`: the new secret in the answer. */
export async function rotateSecretUnit(input: WriteInput<Routes["rotateSecret"]>) {
  const { trx, body, projectId, reply } = input;
  const row = await rotateSecret(trx, projectId, body.webhookId);
  return reply({ success: true, webhook: { ...webhookJson(row), secret: row.secret } });
}

/** The write unit of `POST /v1/webhooks/test`: a `webhook.test` event for the endpoint. */
export async function testWebhookUnit(input: WriteInput<Routes["test"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const { eventId, delivery } = await sendTestEvent(trx, projectId, body.webhookId, nowMs);
  return reply({ success: true, eventId, delivery: deliveryJson(delivery) });
}

/** The write unit of `POST /v1/webhooks/deliveries/retry`: a failed delivery pending again. */
export async function retryDeliveryUnit(input: WriteInput<Routes["retryDelivery"]>) {
  const { trx, nowMs, body, projectId, reply } = input;
  const delivery = await retryDelivery(trx, projectId, body.deliveryId, nowMs);
  return reply({ success: true, delivery: deliveryJson(delivery) });
}

/** `GET /v1/webhooks/deliveries`: one page of an endpoint's deliveries, newest first. */
export function listDeliveriesHandler(deps: AppDeps): RouteHandler<Routes["deliveries"], AppEnv> {
  return async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { rows, pagination } = await paged(q, (page) =>
      listDeliveries(deps.db.read, projectId, q.webhookId, page),
    );
    const deliveries = rows.map(deliveryJson);
    return ok(c, webhookRoutes.deliveries, { success: true, deliveries, pagination });
  };
}

/** Registers the webhook routes' handlers on `app`; create and update check a URL's target first. */
export function registerWebhookRoutes(app: App, deps: AppDeps): void {
  const r = webhookRoutes;
  const targets = targetPolicy(deps);
  writeRoute(app, deps, r.create, createWebhookUnit(deps), {
    check: (body) => assertPublicTarget(body.url, targets),
  });
  app.openapi(r.list, listWebhooksHandler(deps));
  writeRoute(app, deps, r.delete, deleteWebhookUnit);
  writeRoute(app, deps, r.update, updateWebhookUnit, {
    check: (body) =>
      body.url === undefined ? Promise.resolve() : assertPublicTarget(body.url, targets),
  });
  writeRoute(app, deps, r.rotateSecret, rotateSecretUnit);
  writeRoute(app, deps, r.test, testWebhookUnit);
  writeRoute(app, deps, r.retryDelivery, retryDeliveryUnit);
  app.openapi(r.deliveries, listDeliveriesHandler(deps));
}
