/**
 * Route definitions in the one shape every route of this API has (docs/api.md#endpoints): a JSON
 * query (GET) or body (POST), a 200 JSON response with its schema (an export's: a CSV or NDJSON
 * file, docs/api.md#exports), and the error responses of the codes it may answer, on top of
 * those every route has. A POST also answers
 * `IDEMPOTENCY_KEY_REUSED`, since every POST takes an `Idempotency-Key`.
 *
 * The definitions are zod-openapi `createRoute` configs, so the same schemas validate requests,
 * type the handlers' responses (src/http/respond.ts) and document the route in /openapi.json.
 * Each route also declares the shape of its query or body (src/http/strict-input.ts), so a field
 * or parameter it does not define is a 400 (docs/api.md#strict-input).
 * Every route must name its operation (`operationId`, which generated clients use) and say what
 * it does (`description`), so a new route cannot reach the reference without them
 * (docs/api.md#openapi-document-and-typed-client).
 */
import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { ErrorCode } from "../errors.ts";
import { errorResponses, jsonBody, okJson } from "./schemas.ts";
import { declareInput } from "./strict-input.ts";

/** What a route's `request.query` may be. */
type QuerySchema = NonNullable<NonNullable<RouteConfig["request"]>["query"]>;

/**
 * An operation's id: camelCase, a verb then its object (`createAccount`, `listTransactions`),
 * unique in the document (test/openapi.test.ts checks both).
 */
export type OperationId = Uncapitalize<string>;

/** The parts of a route definition that every route has. */
interface RouteDef<S extends z.ZodType, C extends ErrorCode> {
  /** The operation's unique camelCase id. */
  operationId: OperationId;
  /** What the operation does and the rules a caller must know (Markdown, a few sentences). */
  description: string;
  /** The schema of the 200 body. */
  ok: S;
  /** Codes answered besides those every route answers (400, 401, 500, 503). */
  errors?: C[];
}

/**
 * The routes of one resource (its OpenAPI tag): the table `define` builds with the route definers
 * `get(path, summary, {operationId, description, query, ok, errors?})` and
 * `post(path, summary, {operationId, description, body, ok, errors?})`.
 */
export function resourceRoutes<T>(tag: string, define: (route: RouteDefiners) => T): T {
  return define(routeDefiners(tag));
}

/** The parts of an export route's definition (docs/api.md#exports). */
interface DownloadDef<C extends ErrorCode> {
  operationId: OperationId;
  description: string;
  /** What a CSV answer starts with: its header row and a record or two. */
  csvExample: string;
  /** An NDJSON answer's first line or two. */
  ndjsonExample: string;
  errors?: C[];
}

/**
 * The 200 answer of an export: a CSV (`text/csv`) or NDJSON (`application/x-ndjson`) file
 * offered as a download (`Content-Disposition: attachment`), streamed.
 */
function downloadResponse(summary: string, def: { csvExample: string; ndjsonExample: string }) {
  return {
    200: {
      description: `${summary}: a file, streamed`,
      headers: z.object({
        "Content-Disposition": z
          .string()
          .openapi({ example: 'attachment; filename="transactions-all-20261121T082245Z.csv"' }),
      }),
      content: {
        "text/csv": {
          schema: z.string().openapi({ description: "format=csv", example: def.csvExample }),
        },
        "application/x-ndjson": {
          schema: z.string().openapi({
            description: "format=ndjson: one list item per line",
            example: def.ndjsonExample,
          }),
        },
      },
    },
  };
}

/** A GET route of `query` answering `responses`, its query's shape declared for strict input. */
function getRoute<
  const P extends string,
  Q extends QuerySchema,
  Res extends RouteConfig["responses"],
>(
  tags: string[],
  path: P,
  summary: string,
  def: { operationId: OperationId; description: string; query: Q },
  responses: Res,
) {
  declareInput("get", path, { query: def.query });
  return createRoute({
    method: "get",
    path,
    tags,
    summary,
    operationId: def.operationId,
    description: def.description,
    request: { query: def.query },
    responses,
  });
}

/** The route definers of one resource. */
type RouteDefiners = ReturnType<typeof routeDefiners>;

/** The route definers of the resource tagged `tag`. */
function routeDefiners(tag: string) {
  const tags = [tag];
  return {
    get<
      const P extends string,
      Q extends QuerySchema,
      S extends z.ZodType,
      C extends ErrorCode = never,
    >(path: P, summary: string, def: RouteDef<S, C> & { query: Q }) {
      const responses = { ...okJson(def.ok, summary), ...errorResponses(...(def.errors ?? [])) };
      return getRoute(tags, path, summary, def, responses);
    },
    /**
     * A GET answering a streamed file instead of JSON (an export): its errors are JSON as on
     * every route.
     */
    download<const P extends string, Q extends QuerySchema, C extends ErrorCode = never>(
      path: P,
      summary: string,
      def: DownloadDef<C> & { query: Q },
    ) {
      const responses = {
        ...downloadResponse(summary, def),
        ...errorResponses(...(def.errors ?? [])),
      };
      return getRoute(tags, path, summary, def, responses);
    },
    post<
      const P extends string,
      B extends z.ZodType,
      S extends z.ZodType,
      C extends ErrorCode = never,
    >(path: P, summary: string, def: RouteDef<S, C> & { body: B }) {
      const errors = errorResponses<C | "IDEMPOTENCY_KEY_REUSED">(
        ...(def.errors ?? []),
        "IDEMPOTENCY_KEY_REUSED",
      );
      declareInput("post", path, { json: def.body });
      return createRoute({
        method: "post",
        path,
        tags,
        summary,
        operationId: def.operationId,
        description: def.description,
        request: { body: jsonBody(def.body) },
        responses: { ...okJson(def.ok, summary), ...errors },
      });
    },
  };
}
