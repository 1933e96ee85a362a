/**
 * API keys, in one home (docs/api.md#authentication-and-projects): random 256-bit secrets shown
 * once and stored only as SHA-256 hashes. Generating a key, hashing it, storing it for a project,
 * finding the project of an active key, listing keys and revoking one all live here; the `/v1`
 * middleware (src/http/auth.ts), first start (src/bootstrap.ts) and `ledger keys` (src/cli/)
 * call them.
 *
 * A listing names a key by its id (`key_…`) and never carries the secret or its hash: only the
 * holder of a key has it.
 */
import { createHash, randomBytes } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { iso } from "../dates.ts";
import { API_KEY_PREFIX, newId } from "../ids.ts";
import { prepared } from "./prepared.ts";
import type { DB } from "./schema.ts";
import type { WriteQueue } from "./write-path.ts";

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

/** A project's new key: the project's id, the key's id and the key itself (shown once). */
export interface ProjectKey {
  projectId: string;
  /** `key_…`, what `ledger keys list` shows. */
  keyId: string;
  /** The secret; only its hash is stored. */
  apiKey: string;
  /** True when the project was created with this key. */
  created: boolean;
}

/**
 * Creates project `name` (if new) and a new API key for it.
 * @param apiKey a chosen key (at least 20 characters), else a random one
 */
export async function createProjectKey(
  queue: WriteQueue,
  name: string,
  apiKey = generateApiKey(),
): Promise<ProjectKey> {
  return queue.run((trx, nowMs) => createProjectKeyIn(trx, name, apiKey, nowMs));
}

/** `createProjectKey` inside a write unit. */
export async function createProjectKeyIn(
  trx: Transaction<DB>,
  name: string,
  apiKey: string,
  nowMs: number,
): Promise<ProjectKey> {
  const existing = await trx
    .selectFrom("projects")
    .select("id")
    .where("name", "=", name)
    .executeTakeFirst();
  const projectId = existing?.id ?? newId("prj");
  if (!existing) {
    await trx
      .insertInto("projects")
      .values({ id: projectId, name, created_at_ms: nowMs })
      .execute();
  }
  const keyId = await storeApiKey(trx, projectId, apiKey, nowMs);
  return { projectId, keyId, apiKey, created: !existing };
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

/** One key as `ledger keys list --json` prints it; times are ISO 8601 UTC. */
export interface KeyListing {
  keyId: string;
  projectId: string;
  projectName: string;
  createdAt: string;
  /** null while the key is active. */
  revokedAt: string | null;
}

/**
 * Every key, or the keys of project `projectName`, oldest first.
 * @returns null when `projectName` names no project
 */
export async function listKeys(db: Kysely<DB>, projectName?: string): Promise<KeyListing[] | null> {
  if (projectName !== undefined) {
    const project = await db
      .selectFrom("projects")
      .select("id")
      .where("name", "=", projectName)
      .executeTakeFirst();
    if (!project) return null;
  }
  const rows = await db
    .selectFrom("api_keys")
    .innerJoin("projects", "projects.id", "api_keys.project_id")
    .select([
      "api_keys.id as keyId",
      "api_keys.project_id as projectId",
      "projects.name as projectName",
      "api_keys.created_at_ms as createdAtMs",
      "api_keys.revoked_at_ms as revokedAtMs",
    ])
    .$if(projectName !== undefined, (q) => q.where("projects.name", "=", projectName ?? ""))
    .orderBy("api_keys.created_at_ms")
    .orderBy("api_keys.id")
    .execute();
  return rows.map((row) => ({
    keyId: row.keyId,
    projectId: row.projectId,
    projectName: row.projectName,
    createdAt: iso(row.createdAtMs),
    revokedAt: row.revokedAtMs === null ? null : iso(row.revokedAtMs),
  }));
}

/** Revocations made by this process so far (`revokeKey`). */
let revocations = 0;

/**
 * How many keys this process has revoked so far. A cache of keys found active (the `/v1`
 * middleware's) reads a key again once this has changed since it found it active.
 */
export function keyRevocations(): number {
  return revocations;
}

/**
 * Revokes the active key given as the secret itself or as its id (`key_…`). This process refuses
 * it at once (`keyRevocations` changes); every other process within `KEY_TRUST_MS`
 * (src/http/auth.ts).
 * @returns the revoked key's id, or null when no active key matches
 */
export async function revokeKey(queue: WriteQueue, keyOrId: string): Promise<string | null> {
  const revoked = await queue.run(async (trx, nowMs) => {
    const row = await trx
      .updateTable("api_keys")
      .set({ revoked_at_ms: nowMs })
      .where((eb) => eb.or([eb("id", "=", keyOrId), eb("key_hash", "=", hashApiKey(keyOrId))]))
      .where("revoked_at_ms", "is", null)
      .returning("id")
      .executeTakeFirst();
    return row?.id ?? null;
  });
  if (revoked !== null) revocations++;
  return revoked;
}
