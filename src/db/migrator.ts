/**
 * Applies the numbered migrations of `sql/` (0001_init.sql, 0002_…) in order with Kysely's
 * Migrator. Migrations are frozen once merged; each runs in its own transaction. The single
 * binary carries the same files embedded (src/embedded-assets.ts) and applies those instead.
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from "kysely";
import { embeddedAssets } from "../embedded-assets.ts";
import type { DB } from "./schema.ts";

/** Migration file name (`0001_init.sql`) → its SQL text. */
export type MigrationFiles = Readonly<Record<string, string>>;

const MIGRATION_FILE = /^\d{4}_.*\.sql$/;

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

/** Reads the migration files of `dir`. */
export async function readMigrationFiles(dir: string): Promise<MigrationFiles> {
  const files: Record<string, string> = {};
  for (const file of await readdir(dir)) {
    if (MIGRATION_FILE.test(file)) files[file] = await readFile(`${dir}/${file}`, "utf8");
  }
  return files;
}

/** Each migration file, in name order, as a Kysely migration named after the file. */
class SqlFilesProvider implements MigrationProvider {
  constructor(private readonly load: () => Promise<MigrationFiles>) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = await this.load();
    const migrations: Record<string, Migration> = {};
    const names = Object.keys(files).filter((f) => MIGRATION_FILE.test(f));
    for (const file of names.sort()) {
      const text = files[file] ?? "";
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
 * Applies every pending migration, from `source`: a folder, or the files themselves. By default
 * the embedded migrations when the program carries them, else the repository's `sql/`.
 * @returns the names of the migrations applied now.
 * @throws Error when a migration fails (the failed one is rolled back).
 */
export async function migrateToLatest(db: Kysely<DB>, source?: string | MigrationFiles) {
  const files = source ?? embeddedAssets()?.migrations ?? defaultMigrationsDir();
  const load = typeof files === "string" ? () => readMigrationFiles(files) : async () => files;
  const migrator = new Migrator({ db, provider: new SqlFilesProvider(load) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
