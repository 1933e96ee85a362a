/**
 * Applies the numbered migrations in order with Kysely's Migrator: SQLite's from `sql/`
 * (0001_init.sql, 0002_…), PostgreSQL's from `sql/postgres/` (the same numbers, the same schema
 * in PostgreSQL's SQL). Migrations are frozen once merged; all pending ones run in one
 * transaction with their records (on SQLite through TransactionalDdlSqliteAdapter), so a failed
 * or interrupted run leaves nothing half applied. The single binary carries the files
 * embedded (src/embedded-assets.ts; PostgreSQL's under `postgres/` names) and applies those.
 *
 * On PostgreSQL several processes may start at once: the migrator runs under a session-level
 * advisory lock, so one applies the migrations and the others wait for it, then find nothing to
 * do. See docs/operations.md, "PostgreSQL and several servers".
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from "kysely";
import { embeddedAssets } from "../embedded-assets.ts";
import { type Engine, engineOf } from "./engine.ts";
import { UNBOUNDED_STATEMENT } from "./postgres.ts";
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

/** The folder of `engine`'s migrations in the repository. */
export function migrationsDirOf(engine: Engine): string {
  const root = defaultMigrationsDir();
  return engine === "postgres" ? `${root}postgres/` : root;
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
  constructor(
    private readonly load: () => Promise<MigrationFiles>,
    private readonly engine: Engine,
  ) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = await this.load();
    const migrations: Record<string, Migration> = {};
    const names = Object.keys(files).filter((f) => MIGRATION_FILE.test(f));
    for (const file of names.sort()) {
      const text = files[file] ?? "";
      migrations[file.replace(/\.sql$/, "")] = {
        up: async (db) => {
          // PostgreSQL takes a whole file in one simple-protocol query (dollar-quoted function
          // bodies included); SQLite's driver runs one statement at a time.
          if (this.engine === "postgres") await sql.raw(text).execute(db);
          else for (const statement of splitStatements(text)) await sql.raw(statement).execute(db);
        },
      };
    }
    return migrations;
  }
}

/** The embedded migrations of `engine`, by file name, or undefined when none are embedded. */
function embeddedMigrations(engine: Engine): MigrationFiles | undefined {
  const all = embeddedAssets()?.migrations;
  if (all === undefined) return undefined;
  const prefix = engine === "postgres" ? "postgres/" : "";
  const files: Record<string, string> = {};
  for (const [name, text] of Object.entries(all)) {
    if (name.startsWith(prefix) && MIGRATION_FILE.test(name.slice(prefix.length))) {
      files[name.slice(prefix.length)] = text;
    }
  }
  if (Object.keys(files).length === 0) {
    throw new Error(`This program carries no ${engine} migrations; rebuild it`);
  }
  return files;
}

/** An arbitrary constant: the advisory lock key of the migrator (PostgreSQL). */
const MIGRATION_LOCK_KEY = 7_244_311_001;

/**
 * Applies every pending migration, from `source`: a folder, or the files themselves. By default
 * the embedded migrations when the program carries them, else the repository's `sql/`.
 * @returns the names of the migrations applied now.
 * @throws Error when a migration fails (the failed one is rolled back).
 */
export async function migrateToLatest(
  db: Kysely<DB>,
  source?: string | MigrationFiles,
): Promise<string[]> {
  const engine = engineOf(db);
  const files = source ?? embeddedMigrations(engine) ?? migrationsDirOf(engine);
  const load = typeof files === "string" ? () => readMigrationFiles(files) : async () => files;
  const migrate = async (on: Kysely<DB>) => {
    const migrator = new Migrator({ db: on, provider: new SqlFilesProvider(load, engine) });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
    return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
  };
  if (engine !== "postgres") {
    // Nothing pending: no write transaction, so a start does not wait for another writer (on a
    // remote server, the write lock of a killed process's transaction until its stream expires).
    const migrator = new Migrator({ db, provider: new SqlFilesProvider(load, engine) });
    const known = await migrator.getMigrations();
    if (known.every((m) => m.executedAt !== undefined)) return [];
    return migrate(db);
  }
  // One connection holds the lock and runs the migrator, so that the Migrator's own bookkeeping
  // tables are created under the lock too. A waiting process must not give up after the
  // connection's statement timeout while another one applies a long migration.
  return db.connection().execute(async (conn) => {
    await sql`${sql.raw(UNBOUNDED_STATEMENT)}SET statement_timeout = 0`.execute(conn);
    await sql`SET lock_timeout = 0`.execute(conn);
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(conn);
    try {
      return await migrate(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
      await sql`RESET statement_timeout`.execute(conn);
      await sql`RESET lock_timeout`.execute(conn);
    }
  });
}
