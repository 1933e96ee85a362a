/**
 * The handler shapes routes share: a POST whose effect is one write unit (`writeRoute`), and a
 * list that answers one page with its `pagination` object (`paged`).
 */
import type { RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Transaction } from "kysely";
import type { DB } from "../db/schema.ts";
import type { PlainWrite } from "../db/write-path.ts";
import type { App, AppDeps, AppEnv } from "./context.ts";
import { runWrite } from "./idempotency.ts";
import type { Replied, Reply } from "./respond.ts";

/** The validated JSON body of a route. */
type BodyOf<R> = R extends {
  request: { body: { content: { "application/json": { schema: infer S extends z.ZodType } } } };
}
  ? z.output<S>
  : never;

/** What the write unit of a POST route is given. */
export interface WriteInput<R> {
  trx: Transaction<DB>;
  /** The time of the write, in milliseconds since the epoch. */
  nowMs: number;
  /** The request's validated body. */
  body: BodyOf<R>;
  /** The project of the request's API key. */
  projectId: string;
  /** Builds the 200 body, checked against the route's schema (src/http/respond.ts). */
  reply: Reply<R>;
}

/** What a POST route may add to its write unit. */
export interface WriteRouteOptions<R> {
  /**
   * Runs first, outside any transaction (a check that waits, such as a DNS lookup, must not
   * hold the writer).
   */
  check?: (body: BodyOf<R>) => Promise<void>;
  /**
   * The route's plain path (docs/design.md#plain-writes), or undefined for a body that has none:
   * the write path tries it once, first, and runs the unit (the general path) only when it made
   * nothing (`WriteQueue.runWrite`).
   */
  plain?: (input: {
    body: BodyOf<R>;
    projectId: string;
    reply: Reply<R>;
  }) => PlainWrite<Replied<R>> | undefined;
}

/**
 * Registers the handler of a POST route: `unit` runs as one write unit through the queue,
 * honouring the request's Idempotency-Key (`runWrite`, docs/api.md#idempotency), and the body it
 * built with its `reply` is the 200 response (see `WriteRouteOptions` for `check` and
 * `plain`).
 * @throws ApiError IDEMPOTENCY_KEY_REUSED, or whatever `check` or the unit throws
 */
export function writeRoute<R extends RouteConfig & { method: "post" }>(
  app: App,
  deps: AppDeps,
  route: R,
  unit: (input: WriteInput<R>) => Promise<Replied<R>>,
  options: WriteRouteOptions<R> = {},
): void {
  app.openapi(route, async (c: Context<AppEnv, string, { out: { json: BodyOf<R> } }>) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    if (options.check) await options.check(body);
    const { plain } = options;
    return runWrite(
      c,
      deps.queue,
      route,
      (trx, nowMs, reply) => unit({ trx, nowMs, body, projectId, reply }),
      plain ? (reply) => plain({ body, projectId, reply }) : undefined,
    );
  });
}

/** A page of a list: `limit` rows from `offset`. */
export interface Page {
  limit: number;
  offset: number;
}

/**
 * One page of a list at the query's `limit` and `offset` (docs/api.md#transaction-list).
 * @param read reads the page's rows and how many rows the whole list holds
 * @returns the rows and the list's `pagination` object (`hasMore` when rows exist beyond the page)
 */
export async function paged<T>(
  query: Page,
  read: (page: Page) => Promise<{ rows: T[]; totalCount: number }>,
) {
  const page = { limit: query.limit, offset: query.offset };
  const { rows, totalCount } = await read(page);
  const hasMore = page.offset + rows.length < totalCount;
  return { rows, pagination: { ...page, totalCount, hasMore } };
}
