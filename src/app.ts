/**
 * `createApp(deps)`: the Hono app with its middleware, every route of docs/api.md#endpoints,
 * `/health`, `/ready`, `/openapi.json` (with the event webhooks), `/docs`, `/console` and
 * `/metrics`. No side effects: only `server.ts` opens the database, starts the scheduler and
 * handles signals.
 */
import { randomUUID } from "node:crypto";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { registerAccountRoutes } from "./accounts/routes.ts";
import { registerBatchRoutes } from "./batch/routes.ts";
import { BATCH_BODY_LIMIT_BYTES } from "./batch/schemas.ts";
import { registerConsole } from "./console/routes.ts";
import { describeDatabaseError } from "./db/storage-errors.ts";
import { ApiError, errorResponse } from "./errors.ts";
import { registerEventWebhooks } from "./event-webhooks.ts";
import { requireApiKey } from "./http/auth.ts";
import { jsonBodyChecks } from "./http/body.ts";
import type { App, AppDeps, AppEnv } from "./http/context.ts";
import { registerDocs } from "./http/docs.ts";
import { exactJsonResponses } from "./http/json.ts";
import { unmatchedRequest } from "./http/method-not-allowed.ts";
import { nodeOutgoing } from "./http/node-env.ts";
import { registerProbes } from "./http/probes.ts";
import { validationHook } from "./http/strict-input.ts";
import { registerLedgerRoutes } from "./ledger/routes.ts";
import { registerModelRoutes } from "./models/routes.ts";
import { registerPlanRoutes } from "./plans/routes.ts";
import { registerProjectRoutes } from "./projects/routes.ts";
import { registerReservationRoutes } from "./reservations/routes.ts";
import { registerStripeRoutes } from "./stripe/routes.ts";
import { registerTransactionRoutes } from "./transactions/routes.ts";
import { registerTransferRoutes } from "./transactions/transfer-routes.ts";
import { registerUsageRoutes } from "./usage/routes.ts";
import { registerWebhookRoutes } from "./webhooks/routes.ts";

/** Accepts `X-Request-Id` when it is 1–128 safe characters, or generates one; echoes it. */
export const requestId: MiddlewareHandler<AppEnv> = async (c, next) => {
  const given = c.req.header("X-Request-Id");
  const id = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
  c.set("requestId", id);
  const outgoing = nodeOutgoing(c.env);
  if (outgoing) {
    // On Node the header goes on the response being written: every answer carries it, however
    // it was built, and the answer's own headers stay a plain object (docs/design.md#http-on-node).
    outgoing.setHeader("X-Request-Id", id);
    return next();
  }
  c.header("X-Request-Id", id);
  await next();
  // Also on responses built without the context's headers.
  if (c.res.headers.get("X-Request-Id") !== id) c.header("X-Request-Id", id);
};

/**
 * The route a request matched, as its pattern (`/v1/accounts/create`), for logs and metric
 * labels: the last handler registered for a method (middleware is registered for ALL), or
 * `unmatched` when no route matched (a 404). Never the raw URL, which may hold ids or emails.
 */
export function routeLabel(c: Context): string {
  const routes = matchedRoutes(c).filter((r) => r.method !== "ALL");
  return routes.at(-1)?.path ?? "unmatched";
}

/** Routes polled by load balancers and scrapers: their requests are logged at `debug` only. */
const PROBE_ROUTES = new Set(["/health", "/ready", "/metrics"]);

/**
 * One JSON log line and the HTTP metrics of each request; the line of a probe (`/health`,
 * `/ready`, `/metrics`) is at `debug` (docs/operations.md#logs).
 */
export function observe(deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const seconds = (performance.now() - started) / 1000;
    const route = routeLabel(c);
    const status = c.res.status;
    deps.metrics.observeRequest(c.req.method, route, status, seconds);
    const log = PROBE_ROUTES.has(route)
      ? (line: object, msg: string) => deps.logger.debug?.(line, msg)
      : (line: object, msg: string) => deps.logger.info(line, msg);
    log(
      {
        requestId: c.get("requestId"),
        method: c.req.method,
        route,
        status,
        durationMs: Math.round(seconds * 1_000_000) / 1000,
        projectId: c.get("projectId"),
        code: status >= 400 ? await errorCode(c) : undefined,
        cause: databaseCause(c.error),
      },
      "request",
    );
  };
}

/** A failed request's error `code`, from the error thrown or else the error body answered. */
async function errorCode(c: Context): Promise<string | undefined> {
  if (c.error instanceof ApiError) return c.error.code;
  try {
    const body: unknown = await c.res.clone().json();
    const error = body && typeof body === "object" && "error" in body ? body.error : undefined;
    const code = error && typeof error === "object" && "code" in error ? error.code : undefined;
    return typeof code === "string" ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Either header carries the key (docs/api.md#authentication-and-projects). */
const SECURITY: Record<string, string[]>[] = [{ ApiKey: [] }, { BearerAuth: [] }];

/**
 * The top of /openapi.json; the routes, their schemas and the event webhooks come from the
 * registry (docs/api.md#openapi-document-and-typed-client).
 */
export const OPENAPI_CONFIG = {
  openapi: "3.1.0",
  info: {
    title: "Credit Ledger API",
    version: "1.0.0",
    description: "Exact credit balances, reservations, plans and LLM usage costing.",
  },
  security: SECURITY,
};

/** The OpenAPI document `app` serves at /openapi.json, built in-process. */
export function openApiDocument(app: App) {
  return app.getOpenAPI31Document(OPENAPI_CONFIG);
}

/** The database's own error behind a 503 (e.g. `SQLITE_FULL: …`), for the request's log line. */
function databaseCause(err: unknown): string | undefined {
  if (!(err instanceof ApiError) || err.code !== "SERVICE_UNAVAILABLE" || !err.cause) return;
  return scrub(describeDatabaseError(err.cause));
}

/** Builds the app over `deps`. */
export function createApp(deps: AppDeps): App {
  const app: App = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", exactJsonResponses());
  app.use("*", requestId);
  app.use("*", observe(deps));
  registerProbes(app, deps);
  app.get("/metrics", async (c) =>
    c.body(await deps.metrics.render(), 200, { "Content-Type": deps.metrics.contentType }),
  );
  registerDocs(app);
  registerConsole(app);
  app.use("/v1/*", requireApiKey(deps.db.read));
  const batchLimit = Math.max(BATCH_BODY_LIMIT_BYTES, deps.config.BODY_LIMIT_BYTES);
  app.use(
    "/v1/*",
    jsonBodyChecks(deps.config.BODY_LIMIT_BYTES, new Map([["/v1/batch", batchLimit]])),
  );
  registerProjectRoutes(app, deps);
  registerAccountRoutes(app, deps);
  registerLedgerRoutes(app, deps);
  registerTransactionRoutes(app, deps);
  registerTransferRoutes(app, deps);
  registerPlanRoutes(app, deps);
  registerReservationRoutes(app, deps);
  registerUsageRoutes(app, deps);
  registerModelRoutes(app, deps);
  registerWebhookRoutes(app, deps);
  registerStripeRoutes(app, deps);
  // After the write routes: a batch runs the ones they registered.
  registerBatchRoutes(app, deps);
  registerEventWebhooks(app);
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "BearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "The same API key as `Authorization: Bearer <key>`",
  });
  app.doc31("/openapi.json", OPENAPI_CONFIG);
  app.get("/", (c) => c.redirect("/console", 302));
  app.notFound(unmatchedRequest(app));
  app.onError((err, c) =>
    errorResponse(err, c, (e) =>
      deps.logger.error(
        { requestId: c.get("requestId"), route: routeLabel(c), err: errorSummary(e) },
        "unhandled error",
      ),
    ),
  );
  return app;
}

/** An error's name and message for the log, with anything like an API key or email masked. */
function errorSummary(err: unknown): { name: string; message: string } {
  const { name, message } = err instanceof Error ? err : { name: "unknown", message: String(err) };
  return { name, message: scrub(message) };
}

function scrub(text: string): string {
  return text
    .replace(/\bldg_[\w-]+/g, "ldg_[redacted]")
    .replace(/[^\s'"<>@]+@[^\s'"<>@]+\.[a-z]{2,}/gi, "[email]");
}
