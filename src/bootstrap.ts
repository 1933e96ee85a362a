/**
 * First-start setup of a project (see docs/operations.md, "Install and start"): a default
 * project with one API key when the database has no project. The model catalog's first-start
 * seed is src/models/seed.ts's.
 */
import type { Kysely } from "kysely";
import { createProjectKeyIn, generateApiKey } from "./db/api-keys.ts";
import { lockKey } from "./db/locks.ts";
import type { DB } from "./db/schema.ts";
import type { WriteQueue } from "./db/write-path.ts";

/**
 * On an empty database: creates the `default` project and its key.
 * @param chosenKey a chosen key (at least 20 characters), else a random one
 * @returns the new key, or null when a project already existed
 */
export async function bootstrapProject(
  db: Kysely<DB>,
  queue: WriteQueue,
  chosenKey?: string,
): Promise<{ projectId: string; apiKey: string } | null> {
  const any = await db.selectFrom("projects").select("id").limit(1).executeTakeFirst();
  if (any) return null;
  // Several processes may start on one empty database at once: the check is made again inside
  // the write, under a lock on PostgreSQL, so exactly one of them creates the project and key.
  return queue.run(async (trx, nowMs) => {
    await lockKey(trx, "bootstrap", "default");
    const again = await trx.selectFrom("projects").select("id").limit(1).executeTakeFirst();
    if (again) return null;
    return createProjectKeyIn(trx, "default", chosenKey ?? generateApiKey(), nowMs);
  });
}
