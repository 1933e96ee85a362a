/**
 * Helpers of the credit grant tests: a ledger on a fake clock served over real HTTP (a listening
 * server, called with fetch), and the grant expiry job. A call names its route by method and
 * path, as a client does; its 200 body is checked against that route's own schema and typed by
 * it, and an error against the API's error schema.
 */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { accountRoutes } from "../src/accounts/routes.ts";
import type { ErrorBody, ErrorCode } from "../src/errors.ts";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import type { ledgerRoutes } from "../src/ledger/routes.ts";
import type { planRoutes } from "../src/plans/routes.ts";
import type { reservationRoutes } from "../src/reservations/routes.ts";
import type { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError, findRoute, type OkBody } from "./contract.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { fetchFrom, okBody as routeOk, sendJson } from "./http-client.ts";

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

type ValueOf<T> = T[keyof T];

/** The routes the grant tests call. */
type GrantTestRoute =
  | ValueOf<typeof accountRoutes>
  | ValueOf<typeof ledgerRoutes>
  | ValueOf<typeof transactionRoutes>
  | ValueOf<typeof planRoutes>
  | ValueOf<typeof reservationRoutes>;

/** `P` without its query string. */
type BarePath<P extends string> = P extends `${infer B}?${string}` ? B : P;

/** The route answering method `M` at path `P` (its query ignored). */
export type RouteAt<M extends string, P extends string> = Extract<
  GrantTestRoute,
  { method: Lowercase<M>; path: BarePath<P> }
>;

/** A grant as the grant list shows it. */
export type Grant = OkBody<typeof ledgerRoutes.grants>["grants"][number];
/** A ledger entry as the transaction list shows it. */
export type Txn = OkBody<typeof transactionRoutes.list>["items"][number];
/** The `error` of an error answer. */
export type ApiErrorObject = ErrorBody["error"];

/** An answer of the server to a call of `route`: the body is not yet checked (see `okBody`). */
export interface HttpReply<R> {
  route: R;
  status: number;
  body: unknown;
  /** The method and path called, for messages. */
  call: string;
}

export interface HttpLedger {
  t: TestLedger;
  /** Calls the running server. @returns the answer, its body parsed but not checked */
  http: <M extends string, P extends string>(
    method: M,
    path: P,
    body?: unknown,
  ) => Promise<HttpReply<RouteAt<M, P>>>;
  /** Calls the server and expects a 200. @returns the body, checked against the route's schema */
  ok: <M extends string, P extends string>(
    method: M,
    path: P,
    body?: unknown,
  ) => Promise<OkBody<RouteAt<M, P>>>;
  /** Calls the server and expects the API's error `status`/`code`. @returns the error object */
  fail: (
    method: string,
    path: string,
    body: unknown,
    status: number,
    code: ErrorCode,
  ) => Promise<ApiErrorObject>;
  /** The ISO instant `ms` after the fake clock's now. */
  isoIn: (ms: number) => string;
  /** Runs the grant expiry job now. */
  expireJob: () => Promise<{ expiries: number; failed: number }>;
  /** The account's grants (all, newest first). */
  grants: (ref: string) => Promise<Grant[]>;
  /** The account's transactions, oldest first. */
  txns: (ref: string) => Promise<Txn[]>;
  /** The account's balance view. */
  balance: (ref: string) => Promise<OkBody<typeof accountRoutes.balance>>;
  close: () => Promise<void>;
}

/**
 * Asserts that `res` is a 200 whose body matches its route's 200 schema, with no undeclared field.
 * @returns the body, typed by the route
 */
export function okBody<R extends RouteConfig>(res: HttpReply<R>): OkBody<R> {
  return routeOk(res.route, res, `${res.call}: ${JSON.stringify(res.body)}`);
}

/** A ledger on a fake clock starting at `start`, served on a random port. */
export async function httpLedger(start = "2026-03-01T00:00:00Z"): Promise<HttpLedger> {
  const t = await makeLedger({ fakeClock: start });
  const base = await t.listen();
  const http: HttpLedger["http"] = async (method, path, body) => {
    const call = `${method} ${path}`;
    const route = findRoute(t.app, method, path);
    if (!route) throw new Error(`no route answers ${call}`);
    const { status, body: parsed } = await sendJson(fetchFrom(base), t.key, method, path, { body });
    // `findRoute` matched the method and path that `RouteAt` selects by.
    return { route: route as RouteAt<typeof method, typeof path>, status, body: parsed, call };
  };
  const ok: HttpLedger["ok"] = async (method, path, body) => okBody(await http(method, path, body));
  return {
    t,
    http,
    ok,
    fail: async (method, path, body, status, code) =>
      expectError(await http(method, path, body), status, code).error,
    isoIn: (ms) => new Date(t.now() + ms).toISOString(),
    expireJob: () => runExpireGrants({ queue: t.ledger.queue, nowMs: t.now() }),
    grants: async (ref) =>
      (await ok("GET", `/v1/accounts/grants?accountId=${encodeURIComponent(ref)}&limit=1000`))
        .grants,
    txns: async (ref) =>
      [
        ...(await ok("GET", `/v1/transactions?accountId=${encodeURIComponent(ref)}&limit=500`))
          .items,
      ].reverse(),
    balance: (ref) => ok("GET", `/v1/accounts/balance?accountId=${encodeURIComponent(ref)}`),
    close: () => t.close(),
  };
}

/** Sum of the grants' `remaining`, in micro-credits (exact). */
export function remainingMicros(grants: Grant[]): number {
  return grants.reduce((sum, g) => sum + Math.round(g.remaining * 1e6), 0);
}

const validationDetails = z.array(z.object({ path: z.string() }));

/** The field paths a VALIDATION_ERROR names (`details[].path`). */
export function validationPaths(error: ApiErrorObject): string[] {
  return validationDetails.parse(error.details).map((d) => d.path);
}
