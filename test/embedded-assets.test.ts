/**
 * The single binary's embedded files: when set, migrations and the catalog seeding use them
 * instead of `sql/` and `data/models.json`. The test unsets them at its end: `npm run test:fast`
 * shares one module graph between the files a worker runs (vitest.fast.config.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { readMigrationFiles } from "../src/db/migrator.ts";
import { embeddedAssets, setEmbeddedAssets } from "../src/embedded-assets.ts";
import { seedModelsIfEmpty } from "../src/models/seed.ts";
import { openLedger } from "../src/runtime.ts";

const repo = (path: string) => new URL(`../${path}`, import.meta.url).pathname;

describe("embedded assets", () => {
  const dir = mkdtempSync(join(tmpdir(), "ledger-embedded-"));
  afterAll(() => {
    setEmbeddedAssets(undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("are used instead of the files on disk", async () => {
    expect(embeddedAssets()).toBeUndefined();
    const shipped = JSON.parse(readFileSync(repo("data/models.json"), "utf8")) as {
      models: unknown[];
    };
    setEmbeddedAssets({
      // The real migrations plus one only the embedded set has, to tell the sources apart.
      migrations: {
        ...(await readMigrationFiles(repo("sql"))),
        "9999_embedded_probe.sql": "CREATE TABLE embedded_probe (id INTEGER PRIMARY KEY);\n",
      },
      modelCatalog: JSON.stringify({ ...shipped, models: shipped.models.slice(0, 1) }),
    });
    const ledger = await openLedger(loadConfig({ DATABASE_URL: `file:${join(dir, "e.db")}` }));
    try {
      const probe = await sql<{ n: number }>`SELECT count(*) AS n FROM embedded_probe`.execute(
        ledger.db.read,
      );
      expect(probe.rows[0]?.n).toBe(0);
      expect(await seedModelsIfEmpty(ledger.db.read, ledger.queue)).toBe(1);
    } finally {
      await ledger.close();
    }
  });
});
