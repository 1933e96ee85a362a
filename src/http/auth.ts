/**
 * API keys (docs/api.md#authentication-and-projects): random 256-bit secrets shown once, stored only as SHA-256 hashes.
 * `X-API-Key` → project; a missing, unknown or revoked key is 401 UNAUTHORIZED.
 */
import { createHash, randomBytes } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Kysely } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { AppEnv } from "./context.ts";

/** Prefix of every generated key, so that a leaked key is recognisable. */
export const API_KEY_PREFIX = "ldg_";

/** A new API key: `ldg_` and 43 base64url characters (256 random bits). */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** The stored form of a key: its SHA-256, hex. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Stores the hash of `apiKey` for `projectId`. @returns the key's id. */
export async function storeApiKey(
  db: Kysely<DB>,
  projectId: string,
  apiKey: string,
  nowMs: number,
): Promise<string> {
  const id = newId("key");
  await db
    .insertInto("api_keys")
    .values({ id, project_id: projectId, key_hash: hashApiKey(apiKey), created_at_ms: nowMs })
    .execute();
  return id;
}

const activeKey = prepared<{ keyHash: string }, { project_id: string }>((db, arg) =>
  db
    .selectFrom("api_keys")
    .select("project_id")
    .where("key_hash", "=", arg("keyHash"))
    .where("revoked_at_ms", "is", null),
);

/** The project of an active key, or null. */
export async function projectOfKey(db: Kysely<DB>, apiKey: string): Promise<string | null> {
  const { rows } = await db.executeQuery(activeKey(db, { keyHash: hashApiKey(apiKey) }));
  return rows[0]?.project_id ?? null;
}

/** Middleware for /v1: sets `projectId` from `X-API-Key`, else throws 401. */
export function requireApiKey(db: Kysely<DB>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const key = c.req.header("X-API-Key");
    const projectId = key && key.length <= 512 ? await projectOfKey(db, key) : null;
    if (!projectId) throw new ApiError("UNAUTHORIZED", "Missing or invalid API key");
    c.set("projectId", projectId);
    await next();
  };
}
