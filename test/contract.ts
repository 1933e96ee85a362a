/**
 * The routes of the running app, read from its OpenAPI registry (the same `createRoute`
 * definitions that validate requests), and the check that a response matches its route's
 * declared schema: the 200 schema for a success, the error schema for anything else, and no
 * field that the schema does not declare.
 */
import type { RouteConfig, z } from "@hono/zod-openapi";
import { expect } from "vitest";
import type { ErrorBody, ErrorCode } from "../src/errors.ts";
import type { App } from "../src/http/context.ts";
import type { OkSchema } from "../src/http/respond.ts";
import { errorBodySchema } from "../src/http/schemas.ts";

/** One registered route: its method (upper case), OpenAPI path and definition. */
export interface RegisteredRoute {
  method: string;
  path: string;
  route: RouteConfig;
}

/** Every route registered with the app's OpenAPI registry (the /v1 API). */
export function registeredRoutes(app: App): RegisteredRoute[] {
  return app.openAPIRegistry.definitions.flatMap((d) =>
    d.type === "route"
      ? [{ method: d.route.method.toUpperCase(), path: d.route.path, route: d.route }]
      : [],
  );
}

/** The JSON schema of a route's response with `status`, if it declares one. */
function responseSchema(route: RouteConfig, status: number): z.ZodType | undefined {
  const response = route.responses[status] as
    | { content?: Record<string, { schema?: unknown }> }
    | undefined;
  const schema = response?.content?.["application/json"]?.schema;
  return schema && typeof schema === "object" && "safeParse" in schema
    ? (schema as z.ZodType)
    : undefined;
}

/** Paths present in `raw` that `parsed` (zod's output, which drops undeclared keys) lacks. */
function undeclared(raw: unknown, parsed: unknown, path: string): string[] {
  if (Array.isArray(raw) && Array.isArray(parsed)) {
    return raw.flatMap((item, i) => undeclared(item, parsed[i], `${path}[${i}]`));
  }
  if (raw && typeof raw === "object" && parsed && typeof parsed === "object") {
    // zod builds its output by assignment, so a `__proto__` key (plain data in metadata) never
    // becomes an own key of the parsed copy; it is declared wherever its object is.
    return Object.entries(raw).flatMap(([key, value]) =>
      Object.hasOwn(parsed, key) || key === "__proto__"
        ? undeclared(value, (parsed as Record<string, unknown>)[key], `${path}.${key}`)
        : [`${path}.${key}`],
    );
  }
  return [];
}

/**
 * Problems of a response against its route's schema (empty when it conforms): a success must
 * parse with the route's 200 schema, an error with the error schema, and neither may carry a
 * field its schema does not declare.
 */
export function responseProblems(route: RouteConfig | undefined, status: number, body: unknown) {
  const schema = status === 200 && route ? responseSchema(route, 200) : errorBodySchema;
  if (!schema) return [`no schema for status ${status}`];
  const parsed = schema.safeParse(body);
  if (!parsed.success) return parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  return undeclared(body, parsed.data, "body").map((p) => `${p}: not declared by the route`);
}

/** The registered route answering `method` and `path` (query ignored), if any. */
export function findRoute(app: App, method: string, path: string): RouteConfig | undefined {
  const bare = path.split("?")[0];
  return registeredRoutes(app).find((r) => r.method === method && r.path === bare)?.route;
}

/** The body a route answers with 200, as a client parses it. */
export type OkBody<R> = z.infer<OkSchema<R>>;

/**
 * Asserts that `res` is the API's error: `status`, `code`, a string message, and nothing
 * but `code`, `message` and `details` in `error`.
 */
export function expectError(
  res: { status: number; body: unknown },
  status: number,
  code: ErrorCode,
): ErrorBody {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  const parsed = errorBodySchema.strict().parse(res.body);
  expect(parsed.error.code).toBe(code);
  expect(Object.keys(parsed.error).every((k) => ["code", "message", "details"].includes(k))).toBe(
    true,
  );
  return { success: false, error: { ...parsed.error, code } };
}
