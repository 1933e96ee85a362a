/**
 * Typed success responses: every handler answers through `ok` (or `runWrite`, which uses it), so
 * the body is checked at compile time against the 200 schema of the handler's own route.
 *
 * - `RouteBody<R>` is the body a route declares, with each number allowed to be an
 *   `ExactDecimal` (an amount written as its exact literal). A body built as an object literal
 *   for it (the argument of `ok`, or of a write unit's `reply`) gets TypeScript's
 *   excess-property check, so a field the route does not declare, a missing one or a renamed
 *   one fails `tsc`; the functions that build API objects
 *   (`accountJson`, …) declare their return types with `WireOf<…>` of their schemas
 *   (src/wire.ts) for the same check on nested objects.
 * - zod-openapi then checks the response type against the route once more.
 */
import type { RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Wire } from "../wire.ts";

/** The zod schema of a route's 200 JSON response. */
export type OkSchema<R> = R extends {
  responses: { 200: { content: { "application/json": { schema: infer S extends z.ZodType } } } };
}
  ? S
  : never;

/** The body a route answers with 200, as a handler builds it. */
export type RouteBody<R> = Wire<z.infer<OkSchema<R>>>;

/**
 * A body a write unit built with its `reply` (see `runWrite`): building it through a function
 * whose parameter has the route's body type is what makes TypeScript check the object literal
 * for fields the route does not declare (an async function's returned literal is not checked).
 */
export interface Replied<R> {
  body: RouteBody<R>;
}

/** What a write unit is given to build its response body with. */
export type Reply<R> = (body: RouteBody<R>) => Replied<R>;

/** The `Reply` of a route. */
export function replyFor<R>(_route: R): Reply<R> {
  return (body) => ({ body });
}

/**
 * Answers 200 with `body`, written as exact JSON.
 * @param route the route being answered: its 200 schema types `body`
 */
export function ok<R extends RouteConfig>(c: Context, _route: R, body: NoInfer<RouteBody<R>>) {
  return c.json(body, 200);
}
