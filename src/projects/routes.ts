/** Routes of the API key's project and its credit price (docs/api.md#charging-usage-in-credits). */
import type { RouteHandler } from "@hono/zod-openapi";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
import { type WriteInput, writeRoute } from "../http/handlers.ts";
import { ok } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { getProjectQuery, projectJson, projectResponse, updateProjectBody } from "./schemas.ts";
import { readProject, setCreditPrice } from "./service.ts";

/** The project routes. */
export const projectRoutes = resourceRoutes("Project", (route) => ({
  get: route.get("/v1/project", "Get the API key's project and its credit price", {
    operationId: "getProject",
    description:
      "Answers the project of the API key: its id, name, `creditsPerUsd` (the credit price: " +
      "credits charged per USD of model cost, null until set) and creation time.",
    query: getProjectQuery,
    ok: projectResponse,
  }),
  update: route.post("/v1/project/update", "Set the project's credit price", {
    operationId: "updateProject",
    description:
      "Sets `creditsPerUsd` (> 0, at most 6 decimals, at most 1e9; null unsets it). Usage " +
      "charged later (`deduct: true`, a confirm with `usage`) is costed at it, rounded up to " +
      "the micro-credit; records already charged keep what they were charged.",
    body: updateProjectBody,
    ok: projectResponse,
  }),
}));

type Routes = typeof projectRoutes;

/** `GET /v1/project`: the API key's project. */
export function getProjectHandler(deps: AppDeps): RouteHandler<Routes["get"], AppEnv> {
  return async (c) => {
    const project = await readProject(deps.db.read, c.get("projectId"));
    return ok(c, projectRoutes.get, { success: true, project: projectJson(project) });
  };
}

/** The write unit of `POST /v1/project/update`: the project's credit price set. */
export async function updateProjectUnit(input: WriteInput<Routes["update"]>) {
  const { trx, body, projectId, reply } = input;
  const project = await setCreditPrice(trx, projectId, body.creditsPerUsd);
  if (project === null) throw new Error(`project ${projectId} of an API key does not exist`);
  return reply({ success: true, project: projectJson(project) });
}

/** Registers the project routes' handlers on `app`. */
export function registerProjectRoutes(app: App, deps: AppDeps): void {
  app.openapi(projectRoutes.get, getProjectHandler(deps));
  writeRoute(app, deps, projectRoutes.update, updateProjectUnit);
}
