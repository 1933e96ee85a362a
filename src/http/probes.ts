/**
 * `GET /health` and `GET /ready` (docs/operations.md#health-and-readiness), documented in
 * /openapi.json like every route, without the API key: health says the process answers, ready
 * says the database answers and can write (503 while it does not, or while writes fail for lack
 * of space or an I/O error: the write path's probe ends that once a write succeeds again).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import type { App, AppDeps } from "./context.ts";

const healthSchema = z
  .object({ status: z.literal("ok") })
  .openapi("Health", { example: { status: "ok" } });

const readySchema = z
  .object({ status: z.literal("ready") })
  .openapi("Ready", { example: { status: "ready" } });

const unavailableSchema = z
  .object({
    status: z.literal("unavailable"),
    reason: z
      .string()
      .optional()
      .openapi({ description: "Present while the database cannot write" }),
  })
  .openapi("Unavailable", { example: { status: "unavailable" } });

const tags = ["Service"];

/** The two probes, for tests and tools that call them by definition. */
export const probeRoutes = {
  health: createRoute({
    method: "get",
    path: "/health",
    tags,
    summary: "Liveness: the process answers",
    operationId: "getHealth",
    description:
      "Answers 200 `{status: ok}` while the process serves requests; it reads no database. " +
      "Needs no API key.",
    security: [],
    responses: {
      200: {
        description: "The process answers",
        content: { "application/json": { schema: healthSchema } },
      },
    },
  }),
  ready: createRoute({
    method: "get",
    path: "/ready",
    tags,
    summary: "Readiness: the database answers",
    operationId: "getReadiness",
    description:
      "Answers 200 `{status: ready}` when a query on the database succeeds, and 503 " +
      "`{status: unavailable}` while it does not, or while writes fail because the database " +
      "cannot write (a full disk; then with `reason`). Route no traffic to the process then. " +
      "Needs no API key.",
    security: [],
    responses: {
      200: {
        description: "The database answers",
        content: { "application/json": { schema: readySchema } },
      },
      503: {
        description: "The database cannot be reached, or cannot write",
        content: { "application/json": { schema: unavailableSchema } },
      },
    },
  }),
};

/** Registers `/health` and `/ready` on `app`. */
export function registerProbes(app: App, deps: AppDeps): void {
  app.openapi(probeRoutes.health, (c) => c.json({ status: "ok" as const }, 200));
  app.openapi(probeRoutes.ready, async (c) => {
    if (deps.queue.health.failure) {
      return c.json({ status: "unavailable" as const, reason: "the database cannot write" }, 503);
    }
    try {
      await sql`SELECT 1`.execute(deps.db.read);
      return c.json({ status: "ready" as const }, 200);
    } catch {
      return c.json({ status: "unavailable" as const }, 503);
    }
  });
}
