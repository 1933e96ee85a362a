/**
 * Routes of docs/api.md#webhook-endpoints: create (the only answer with the secret), list,
 * delete, and the delivery log of one endpoint.
 */
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { pagination } from "../http/schemas.ts";
import {
  createWebhookBody,
  createWebhookResponse,
  deleteWebhookBody,
  deleteWebhookResponse,
  deliveriesQuery,
  listDeliveriesResponse,
  listWebhooksQuery,
  listWebhooksResponse,
} from "./schemas.ts";
import {
  createWebhook,
  deleteWebhook,
  deliveryJson,
  listDeliveries,
  listWebhooks,
  webhookJson,
} from "./service.ts";

const route = resourceRoutes("Webhooks");

const createRoute_ = route.post(
  "/v1/webhooks/create",
  "Create a webhook endpoint (its signing secret is shown only here)",
  {
    body: createWebhookBody,
    ok: createWebhookResponse,
  },
);

const listRoute = route.get(
  "/v1/webhooks",
  "List the project's webhook endpoints (without secrets)",
  {
    query: listWebhooksQuery,
    ok: listWebhooksResponse,
  },
);

const deleteRoute = route.post(
  "/v1/webhooks/delete",
  "Delete a webhook endpoint and stop every delivery to it",
  {
    body: deleteWebhookBody,
    ok: deleteWebhookResponse,
    errors: ["WEBHOOK_NOT_FOUND"],
  },
);

const deliveriesRoute = route.get(
  "/v1/webhooks/deliveries",
  "An endpoint's deliveries, newest first",
  {
    query: deliveriesQuery,
    ok: listDeliveriesResponse,
    errors: ["WEBHOOK_NOT_FOUND"],
  },
);

/** The webhook routes, for tests and tools that call them by definition. */
export const webhookRoutes = {
  create: createRoute_,
  list: listRoute,
  delete: deleteRoute,
  deliveries: deliveriesRoute,
};

export function registerWebhookRoutes(app: App, deps: AppDeps): void {
  app.openapi(createRoute_, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, createRoute_, async (trx, nowMs, reply) => {
      const row = await createWebhook(trx, projectId, body, nowMs);
      return reply({ success: true, webhook: { ...webhookJson(row), secret: row.secret } });
    });
  });

  app.openapi(listRoute, async (c) => {
    const rows = await listWebhooks(deps.db.read, c.get("projectId"));
    return ok(c, listRoute, { success: true, webhooks: rows.map(webhookJson) });
  });

  app.openapi(deleteRoute, async (c) => {
    const { webhookId } = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, deleteRoute, async (trx, nowMs, reply) => {
      await deleteWebhook(trx, projectId, webhookId, nowMs);
      return reply({ success: true, webhookId });
    });
  });

  app.openapi(deliveriesRoute, async (c) => {
    const { webhookId, limit, offset } = c.req.valid("query");
    const page = { limit, offset };
    const projectId = c.get("projectId");
    const { rows, totalCount } = await listDeliveries(deps.db.read, projectId, webhookId, page);
    return ok(c, deliveriesRoute, {
      success: true,
      deliveries: rows.map(deliveryJson),
      pagination: pagination(page, rows.length, totalCount),
    });
  });
}
