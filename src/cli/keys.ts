/**
 * The queries behind `ledger keys list` and `ledger keys revoke`. A listing names a key by its id
 * (`key_…`) and never carries the secret or its hash: only the holder of a key has it.
 */
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { WriteQueue } from "../db/write-path.ts";
import { forgetCheckedKeys, hashApiKey } from "../http/auth.ts";

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
    createdAt: new Date(row.createdAtMs).toISOString(),
    revokedAt: row.revokedAtMs === null ? null : new Date(row.revokedAtMs).toISOString(),
  }));
}

/**
 * Revokes the active key given as the secret itself or as its id (`key_…`). This process refuses
 * it at once; every other process within `KEY_TRUST_MS` (src/http/auth.ts).
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
  if (revoked !== null) forgetCheckedKeys();
  return revoked;
}

/** The text form of `ledger keys list`: one aligned line per key, a header first. */
export function formatKeyTable(keys: KeyListing[]): string {
  const rows = [
    ["KEY ID", "PROJECT", "PROJECT ID", "CREATED", "REVOKED"],
    ...keys.map((k) => [k.keyId, k.projectName, k.projectId, k.createdAt, k.revokedAt ?? "-"]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
