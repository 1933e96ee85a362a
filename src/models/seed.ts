/**
 * Seeding the model catalog (see docs/operations.md, "Install and start"): the shipped catalog
 * on first start when the catalog is empty, and on `ledger models seed`.
 */
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { WriteQueue } from "../db/write-path.ts";
import { embeddedAssets } from "../embedded-assets.ts";
import { type CatalogModel, catalogFileSchema } from "./catalog-format.ts";
import { countModels, DEFAULT_CATALOG_URL, readPricingFile, upsertModels } from "./service.ts";

/**
 * Loads a catalog file into the models table; by default the shipped catalog, embedded in the
 * single binary, else read from `data/models.json`.
 * @returns models written
 */
export async function seedModels(queue: WriteQueue, file?: string | URL): Promise<number> {
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
