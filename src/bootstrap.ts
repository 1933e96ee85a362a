/**
 * First-start setup (see docs/operations.md, "Install and start"): a default project with one
 * API key when the database has no project, and the shipped model catalog when the catalog is
 * empty.
 */
import type { Kysely, Transaction } from "kysely";
import { lockKey } from "./db/locks.ts";
import type { DB } from "./db/schema.ts";
import type { WriteQueue } from "./db/write-path.ts";
import { embeddedAssets } from "./embedded-assets.ts";
import { generateApiKey, storeApiKey } from "./http/auth.ts";
import { newId } from "./ids.ts";
import { type CatalogModel, catalogFileSchema } from "./models/catalog-format.ts";
import {
  countModels,
  DEFAULT_CATALOG_URL,
  readPricingFile,
  upsertModels,
} from "./models/service.ts";

/**
 * Creates project `name` (if new) and a new API key for it.
 * @param apiKey a chosen key (at least 20 characters), else a random one
 * @returns the project id, the key's id (`key_…`, what `ledger keys list` shows) and the key
 *   itself (shown once; only its hash is stored)
 */
export async function createProjectKey(
  queue: WriteQueue,
  name: string,
  apiKey = generateApiKey(),
): Promise<{ projectId: string; keyId: string; apiKey: string; created: boolean }> {
  return queue.run((trx, nowMs) => createProjectKeyIn(trx, name, apiKey, nowMs));
}

/** `createProjectKey` inside a write unit. */
async function createProjectKeyIn(
  trx: Transaction<DB>,
  name: string,
  apiKey: string,
  nowMs: number,
) {
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

/**
 * On an empty database: creates the `default` project and its key.
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

/**
 * Loads a catalog file into the models table; by default the shipped catalog, embedded in the
 * single binary, else read from `data/models.json`.
 * @returns models written
 */
export async function seedModels(queue: WriteQueue, file?: string | URL) {
  const models = await catalogModels(file);
  return queue.run((trx, nowMs) => upsertModels(trx, models, nowMs));
}

async function catalogModels(file: string | URL | undefined): Promise<CatalogModel[]> {
  const embedded = file === undefined ? embeddedAssets()?.modelCatalog : undefined;
  if (embedded === undefined) return (await readPricingFile(file ?? DEFAULT_CATALOG_URL)).models;
  // The embedded text is the shipped file itself, so it is in the service's own format.
  return catalogFileSchema.parse(JSON.parse(embedded)).models;
}

/** Seeds the catalog when it is empty. @returns models written (0 when it was not empty) */
export async function seedModelsIfEmpty(db: Kysely<DB>, queue: WriteQueue): Promise<number> {
  return (await countModels(db)) === 0 ? seedModels(queue) : 0;
}
