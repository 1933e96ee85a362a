/**
 * The handler shapes routes share: a POST whose effect is one write unit (`writeRoute`), and a
 * list that answers one page with its `pagination` object (`paged`).
 */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Transaction } from "kysely";
import type { DB } from "../db/schema.ts";
import type { PlainDebitCall, PlainWrite, WriteQueue, WriteUnit } from "../db/write-path.ts";
import { validationError } from "../errors.ts";
import type { App, AppDeps, AppEnv } from "./context.ts";
import { runWrite } from "./idempotency.ts";
import { type Replied, type Reply, replyFor } from "./respond.ts";
import { inputShape, isMissing, unknownFields } from "./strict-input.ts";

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
  registerOperation(app, deps.queue, route, unit, options);
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

/**
 * A write route as a batch runs it (src/batch/run.ts, docs/api.md#batches): the route's own
 * definition, body schema, `check` and unit, registered by `writeRoute`, so that a batch
 * operation is validated and executed by the code that serves the route alone.
 */
export interface WriteOperation {
  route: RouteConfig;
  /**
   * Validates `raw`, a body as sent, with the route's body schema (as the route's validator
   * does) and runs the route's `check`.
   * @returns the route's write for that body and project, answering the route's 200 body
   * @throws ApiError VALIDATION_ERROR (`details` name `body.<field>`, as the route alone
   *   answers), or whatever `check` throws
   */
  prepare(raw: unknown, projectId: string): Promise<PreparedWrite>;
}

/** A batch operation's write, validated (`WriteOperation.prepare`). */
export interface PreparedWrite {
  /** The unit a keyed single request runs: the plain path first, then the general one. */
  unit: WriteUnit<unknown>;
  /** The route's general unit alone, for an operation whose plain path was found not plain. */
  general: WriteUnit<unknown>;
  /** The plain path as one call of `ledger_plain_debit`, when it is one (a batch groups them). */
  debitCall?: ((nowMs: number) => PlainDebitCall<unknown>) | undefined;
}

const operationsOf = new WeakMap<App, Map<string, WriteOperation>>();

/** The write routes `writeRoute` registered on `app`, by path (`/v1/accounts/create`). */
export function writeOperations(app: App): ReadonlyMap<string, WriteOperation> {
  return operationsOf.get(app) ?? new Map();
}

/** The JSON body schema of a POST route. */
function bodySchemaOf(route: RouteConfig): z.ZodType {
  const media = route.request?.body?.content["application/json"];
  const schema = media && "schema" in media ? media.schema : undefined;
  if (!(schema instanceof z.ZodType)) throw new Error(`${route.path} has no JSON body schema`);
  return schema;
}

/**
 * Records `route` with its unit and options as a `WriteOperation` of `app` (`writeRoute`). The
 * operation's unit is the one a keyed single request runs (`WriteQueue.unitOf`): the route's plain
 * path first when it has one, then, only when that made nothing, its general unit.
 */
function registerOperation<R extends RouteConfig>(
  app: App,
  queue: WriteQueue,
  route: R,
  unit: (input: WriteInput<R>) => Promise<Replied<R>>,
  options: WriteRouteOptions<R>,
): void {
  const schema = bodySchemaOf(route);
  const shape = inputShape(schema);
  const reply = replyFor(route);
  const prepare = async (raw: unknown, projectId: string): Promise<PreparedWrite> => {
    // Strict input, as the route's own validation hook applies it (docs/api.md#strict-input).
    const parsed = schema.safeParse(raw);
    const unknown = unknownFields(shape, raw);
    if (!parsed.success || unknown.length > 0) {
      const error = parsed.success ? undefined : parsed.error;
      throw validationError("body", error, unknown, (path) => isMissing(shape, raw, path));
    }
    // The route's own schema made this value: it is the body its handler would be given.
    const body = parsed.data as BodyOf<R>;
    if (options.check) await options.check(body);
    const plain = options.plain?.({ body, projectId, reply });
    const general: WriteUnit<Replied<R>> = (trx, nowMs) =>
      unit({ trx, nowMs, body, projectId, reply });
    const both = queue.unitOf({ plain, general });
    const debitCall = plain?.debitCall;
    return {
      unit: async (trx, nowMs) => (await both(trx, nowMs)).body,
      general: async (trx, nowMs) => (await general(trx, nowMs)).body,
      debitCall:
        debitCall &&
        ((nowMs) => {
          const call = debitCall(nowMs);
          return { args: call.args, done: (row) => call.done(row)?.body ?? null };
        }),
    };
  };
  const operations = operationsOf.get(app) ?? new Map<string, WriteOperation>();
  operations.set(route.path, { route, prepare });
  operationsOf.set(app, operations);
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
