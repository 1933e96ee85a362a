/**
 * Routes of docs/api.md#webhook-endpoints: create (the only answer with the secret; its target
 * checked before the write unit), list, delete, and the delivery log of one endpoint.
 */
import type { App, AppDeps } from "../http/context.ts";
import { paged, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
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
  webhookJson,
} from "./schemas.ts";
import {
  assertPublicTarget,
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
} from "./service.ts";

/** The webhook routes, for tests and tools that call them by definition. */
export const webhookRoutes = resourceRoutes("Webhooks", (route) => ({
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
  deliveries: route.get("/v1/webhooks/deliveries", "An endpoint's deliveries, newest first", {
    operationId: "listWebhookDeliveries",
    description:
      "Lists one endpoint's deliveries, newest first, with their `status` (`pending`, " +
      "`delivered` or `failed`), `attempts`, last answer and next attempt.",
    query: deliveriesQuery,
    ok: listDeliveriesResponse,
    errors: ["WEBHOOK_NOT_FOUND"],
  }),
}));

export function registerWebhookRoutes(app: App, deps: AppDeps): void {
  const r = webhookRoutes;
  const targets = {
    allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE,
    ...(deps.resolveHost ? { resolveHost: deps.resolveHost } : {}),
  };
  writeRoute(
    app,
    deps,
    r.create,
    async ({ trx, nowMs, body, projectId, reply }) => {
      const max = deps.config.WEBHOOK_MAX_PER_PROJECT;
      const row = await createWebhook(trx, projectId, body, nowMs, max);
      return reply({ success: true, webhook: { ...webhookJson(row), secret: row.secret } });
    },
    { check: (body) => assertPublicTarget(body.url, targets) },
  );

  app.openapi(r.list, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { rows, pagination } = await paged(q, (page) =>
      listWebhooks(deps.db.read, projectId, page),
    );
    return ok(c, r.list, { success: true, webhooks: rows.map(webhookJson), pagination });
  });

  writeRoute(app, deps, r.delete, async ({ trx, nowMs, body, projectId, reply }) => {
    await deleteWebhook(trx, projectId, body.webhookId, nowMs);
    return reply({ success: true, webhookId: body.webhookId });
  });

  app.openapi(r.deliveries, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { rows, pagination } = await paged(q, (page) =>
      listDeliveries(deps.db.read, projectId, q.webhookId, page),
    );
    return ok(c, r.deliveries, { success: true, deliveries: rows.map(deliveryJson), pagination });
  });
}
