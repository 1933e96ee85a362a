/**
 * Applies the numbered migrations of `sql/` (0001_init.sql, 0002_…) in order with Kysely's
 * Migrator. Migrations are frozen once merged; each runs in its own transaction.
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from "kysely";
import type { DB } from "./schema.ts";

/** The repository's `sql/` folder, found from this module's location (src/db or dist/src/db). */
export function defaultMigrationsDir(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  return here.includes("/dist/")
    ? fileURLToPath(new URL("../../../sql/", import.meta.url))
    : fileURLToPath(new URL("../../sql/", import.meta.url));
}

/**
 * Splits a migration file into statements: at each `;` that ends a line, except inside a
 * `CREATE TRIGGER … END;` block. Comment lines are dropped.
 */
export function splitStatements(text: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  let inTrigger = false;
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("--")) continue;
    current.push(line);
    if (/^CREATE\s+TRIGGER/i.test(trimmed)) inTrigger = true;
    const ends = trimmed.endsWith(";");
    if (ends && (!inTrigger || /^END;$/i.test(trimmed))) {
      statements.push(current.join("\n"));
      current = [];
      inTrigger = false;
    }
  }
  if (current.length > 0) statements.push(current.join("\n"));
  return statements;
}

class SqlFolderProvider implements MigrationProvider {
  constructor(private readonly dir: string) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => /^\d{4}_.*\.sql$/.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(`${this.dir}/${file}`, "utf8");
      migrations[file.replace(/\.sql$/, "")] = {
        up: async (db) => {
          for (const statement of splitStatements(text)) await sql.raw(statement).execute(db);
        },
      };
    }
    return migrations;
  }
}

/**
 * Applies every pending migration.
 * @returns the names of the migrations applied now.
 * @throws Error when a migration fails (the failed one is rolled back).
 */
export async function migrateToLatest(db: Kysely<DB>, dir = defaultMigrationsDir()) {
  const migrator = new Migrator({ db, provider: new SqlFolderProvider(dir) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
