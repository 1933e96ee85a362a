/**
 * A JSON client of the API for tests that reach it as a client does (fetch to a listening server,
 * or `app.request` in-process), and the check of a 200 answer against its route's schema.
 */
import type { RouteConfig } from "@hono/zod-openapi";
import { expect } from "vitest";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { type OkBody, responseProblems } from "./contract.ts";

/** An answer: the body is the parsed JSON of no known type (read it through `okBody`). */
export interface JsonReply {
  status: number;
  /** The parsed JSON, or `undefined` for an empty body. */
  body: unknown;
  text: string;
  /** The `Idempotent-Replayed` header. */
  replayed: string | null;
}

/** How a request reaches the service: `fetch` on a base URL, or an app's `request`. */
export type Send = (path: string, init: RequestInit) => Promise<Response>;

/** What one request carries besides its method and path. */
export interface JsonRequest {
  /** Sent as JSON (with its Content-Type) unless undefined. */
  body?: unknown;
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

/** Sends `method` `path` with the API key `apiKey`. @returns the answer, its body parsed */
export async function sendJson(
  send: Send,
  apiKey: string,
  method: string,
  path: string,
  request: JsonRequest = {},
): Promise<JsonReply> {
  const headers: Record<string, string> = { "X-API-Key": apiKey };
  if (request.body !== undefined) headers["Content-Type"] = "application/json";
  if (request.idempotencyKey) headers["Idempotency-Key"] = request.idempotencyKey;
  const res = await send(path, {
    method,
    headers: { ...headers, ...request.headers },
    ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text === "" ? undefined : JSON.parse(text),
    text,
    replayed: res.headers.get("Idempotent-Replayed"),
  };
}

/** A `Send` that fetches from `base` (`http://host:port`). */
export function fetchFrom(base: string): Send {
  return (path, init) => fetch(`${base}${path}`, init);
}

/** `route`'s path with `query` as its query string. */
export function routePath(
  route: RouteConfig,
  query: Record<string, string | number | boolean> = {},
): string {
  const entries = Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]);
  return entries.length === 0 ? route.path : `${route.path}?${new URLSearchParams(entries)}`;
}

/** How many answers had each status: `{ 200: 6, 402: 14 }`. */
export function countStatuses(replies: { status: number }[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

/**
 * Asserts that `res`, an answer of `route`, is 200 with the route's 200 body and no field the
 * route does not declare.
 * @returns the body, typed by the route
 */
export function okBody<R extends RouteConfig>(
  route: R,
  res: { status: number; body: unknown },
  message = JSON.stringify(res.body),
): OkBody<R> {
  expect(res.status, message).toBe(200);
  expect(responseProblems(route, 200, res.body), message).toEqual([]);
  return res.body as OkBody<R>;
}

/**
 * Asserts that the successful ones of simultaneous deductions of 1 from `funded` credits each
 * saw a distinct balance: `funded - 1`, …, 1, 0.
 */
export function expectDistinctBalances(
  replies: { status: number; body: unknown }[],
  funded: number,
) {
  const balances = replies
    .filter((r) => r.status === 200)
    .map((r) => okBody(ledgerRoutes.deduct, r).balance);
  expect([...balances].sort((a, b) => a - b)).toEqual(Array.from({ length: funded }, (_, i) => i));
}
