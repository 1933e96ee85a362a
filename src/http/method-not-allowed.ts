/**
 * The answer to a request no route matched (docs/api.md#errors): a path the app serves with other
 * methods is a 405 `METHOD_NOT_ALLOWED` with an `Allow` header naming them; any other path is a
 * 404 `NOT_FOUND`. Both carry the JSON error body.
 */
import type { Context } from "hono";
import type { Env } from "hono/types";
import { ApiError } from "../errors.ts";

/** What an app tells of its routes (Hono's `app.routes`). */
interface RouteTable {
  routes: readonly { method: string; path: string }[];
}

/** The methods each fixed path of `app` serves (HEAD wherever GET is, as Hono answers it). */
function methodsByPath(app: RouteTable): Map<string, Set<string>> {
  const byPath = new Map<string, Set<string>>();
  for (const route of app.routes) {
    if (route.method === "ALL" || /[*:]/.test(route.path)) continue;
    const methods = byPath.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    if (route.method.toUpperCase() === "GET") methods.add("HEAD");
    byPath.set(route.path, methods);
  }
  return byPath;
}

/**
 * The app's `notFound` handler. The table of paths is built once, at the first unmatched request,
 * when every route has been registered.
 */
export function unmatchedRequest<E extends Env>(app: RouteTable) {
  let table: Map<string, Set<string>> | undefined;
  return (c: Context<E>) => {
    table ??= methodsByPath(app);
    const allowed = table.get(c.req.path);
    if (allowed && !allowed.has(c.req.method)) {
      const allow = [...allowed].sort().join(", ");
      const err = new ApiError(
        "METHOD_NOT_ALLOWED",
        `${c.req.path} does not serve ${c.req.method}; it serves ${allow}`,
        { allow: [...allowed].sort() },
      );
      return c.json(err.toBody(), err.status, { Allow: allow });
    }
    const err = new ApiError("NOT_FOUND", `No route ${c.req.method} ${c.req.path}`);
    return c.json(err.toBody(), err.status);
  };
}
