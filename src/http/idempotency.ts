/**
 * Idempotency-Key handling for every POST (docs/api.md#idempotency).
 *
 * The key is looked up and stored inside the same write unit as the effect, so a retry after a
 * crash or timeout never applies a movement twice and two concurrent requests with one key yield
 * one effect (SQLite's write queue serialises them; on PostgreSQL an advisory lock on the key
 * does, across processes). Only successful responses are stored; a stored response is replayed
 * for 24 hours when path and body (as a JSON value) match, else 409.
 */
import { createHash } from "node:crypto";
import type { RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Transaction } from "kysely";
import { lockKey } from "../db/locks.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, IdempotencyKeyRow } from "../db/schema.ts";
import type { PlainWrite, WriteQueue } from "../db/write-path.ts";
import { ApiError } from "../errors.ts";
import { isLosslessNumber, parseJsonVerbatim, stringifyJson } from "../json.ts";
import type { AppEnv } from "./context.ts";
import { ok, type Replied, type Reply, type RouteBody, replyFor } from "./respond.ts";

/** How long a stored response is replayed, in milliseconds (docs/api.md#idempotency: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const storedResponse = prepared<{ projectId: string; key: string }, IdempotencyKeyRow>((db, arg) =>
  db
    .selectFrom("idempotency_keys")
    .selectAll()
    .where("project_id", "=", arg("projectId"))
    .where("idempotency_key", "=", arg("key")),
);

/** Stores a response; only successful ones are stored, so its status is 200. */
const storeResponse = prepared<Omit<IdempotencyKeyRow, "response_status">, unknown>((db, arg) =>
  db.insertInto("idempotency_keys").values({
    project_id: arg("project_id"),
    idempotency_key: arg("idempotency_key"),
    request_path: arg("request_path"),
    request_hash: arg("request_hash"),
    response_status: 200,
    response_body: arg("response_body"),
    created_at_ms: arg("created_at_ms"),
  }),
);

/**
 * JSON with object keys sorted at every level: one text per JSON value. The body's nesting is
 * bounded before this runs (src/http/json.ts), so the recursion is too.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (isLosslessNumber(value)) return value.toString();
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** The hash a stored response is matched by: SHA-256 of the body's canonical JSON. */
export function requestHash(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

/** The request's Idempotency-Key, validated (1–255 characters), or undefined. */
export function idempotencyKeyOf(c: Context<AppEnv>): string | undefined {
  const key = c.req.header("Idempotency-Key");
  if (key === undefined) return undefined;
  if (key.length < 1 || key.length > 255) {
    throw new ApiError("VALIDATION_ERROR", "Idempotency-Key must be 1-255 characters", [
      { path: "headers.Idempotency-Key", message: "must be 1-255 characters" },
    ]);
  }
  return key;
}

/**
 * Runs a write unit through the queue, honouring the request's Idempotency-Key, and answers 200
 * with the body the unit built for `route` with its `reply`. A route with a plain path hands it as
 * `plain`: the write path tries it once, first, and runs the unit only when it made nothing
 * (`WriteQueue.runWrite`, `unitOf`; docs/design.md#plain-writes).
 * The reuse check hashes the raw JSON body as sent (not the validated one, which drops unknown
 * fields), so a body with one more field is another body.
 * @returns the HTTP response (a replay carries `Idempotent-Replayed: true` and the first
 *   response's text, digit for digit)
 * @throws ApiError IDEMPOTENCY_KEY_REUSED, or whatever the unit throws
 */
export async function runWrite<R extends RouteConfig>(
  c: Context<AppEnv>,
  queue: WriteQueue,
  route: R,
  unit: (trx: Transaction<DB>, nowMs: number, reply: Reply<R>) => Promise<Replied<R>>,
  plain?: (reply: Reply<R>) => PlainWrite<Replied<R>> | undefined,
) {
  const reply = replyFor(route);
  const key = idempotencyKeyOf(c);
  const write = {
    plain: plain?.(reply),
    general: (trx: Transaction<DB>, nowMs: number) => unit(trx, nowMs, reply),
  };
  if (key === undefined) {
    // Without a key to store with the effect, the plain path may commit by itself.
    const { body } = await queue.runWrite(write);
    return ok(c, route, body);
  }
  const projectId = c.get("projectId");
  const path = c.req.path;
  const hash = requestHash(await c.req.json());
  const request = { projectId, key, path, hash };
  const result = await queue.run(async (trx, nowMs) => {
    const stored = await findStored(trx, nowMs, request);
    if (stored !== null) return { replayed: true as const, text: stored };
    const { body } = await queue.unitOf(write)(trx, nowMs);
    await storeAnswer(trx, nowMs, request, stringifyJson(body));
    return { replayed: false as const, body };
  });
  if (!result.replayed) return ok(c, route, result.body);
  c.header("Idempotent-Replayed", "true");
  // The stored text is the response this route gave to the first request with this key (the
  // path is part of the check above), so it has the route's body type; it is parsed verbatim so
  // that the replay is the same text.
  return ok(c, route, parseJsonVerbatim(result.text) as RouteBody<R>);
}

/** A keyed request: its project, key, path and `requestHash` of its raw body. */
export interface KeyedRequest {
  projectId: string;
  key: string;
  path: string;
  hash: string;
}

/**
 * The first step of a keyed write, inside its unit: locks the key (PostgreSQL: a second request
 * with it waits for the first to commit), and finds the response stored under it within 24
 * hours; an older one is deleted, so the key is free again.
 * @returns the stored response's text to replay, or null (the write runs, then `storeAnswer`)
 * @throws ApiError IDEMPOTENCY_KEY_REUSED when the key was stored with another path or body
 */
export async function findStored(
  trx: Transaction<DB>,
  nowMs: number,
  request: KeyedRequest,
): Promise<string | null> {
  const { projectId, key, path, hash } = request;
  // Two processes may receive one key at once: on PostgreSQL the second waits here for the
  // first to commit, then finds its stored response (a no-op on SQLite's serial queue).
  await lockKey(trx, projectId, key);
  const stored = (await trx.executeQuery(storedResponse(trx, { projectId, key }))).rows[0];
  if (stored && stored.created_at_ms > nowMs - IDEMPOTENCY_TTL_MS) {
    if (stored.request_path !== path || stored.request_hash !== hash) {
      throw new ApiError(
        "IDEMPOTENCY_KEY_REUSED",
        "This Idempotency-Key was used with another path or body",
      );
    }
    return stored.response_body;
  }
  if (stored) {
    await trx
      .deleteFrom("idempotency_keys")
      .where("project_id", "=", projectId)
      .where("idempotency_key", "=", key)
      .execute();
  }
  return null;
}

/** Stores `text`, the 200 response of `request`, in the unit's transaction (after `findStored`). */
export async function storeAnswer(
  trx: Transaction<DB>,
  nowMs: number,
  request: KeyedRequest,
  text: string,
): Promise<void> {
  await trx.executeQuery(
    storeResponse(trx, {
      project_id: request.projectId,
      idempotency_key: request.key,
      request_path: request.path,
      request_hash: request.hash,
      response_body: text,
      created_at_ms: nowMs,
    }),
  );
}

/** Deletes stored responses older than 24 hours. @returns how many were deleted. */
export async function purgeIdempotencyKeys(trx: Transaction<DB>, nowMs: number): Promise<number> {
  const result = await trx
    .deleteFrom("idempotency_keys")
    .where("created_at_ms", "<=", nowMs - IDEMPOTENCY_TTL_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
