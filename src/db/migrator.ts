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
 *
 * PostgreSQL's database functions are code, not schema: each lives in one file of
 * `sql/postgres/functions/` and is applied after the numbered migrations whenever its text
 * changes (a repeatable migration, `applyFunctions`; docs/design.md#database-functions).
 */
import { createHash } from "node:crypto";
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

/** A database function's file in `functions/`: the function's name, `.sql`. */
const FUNCTION_FILE = /^[a-z_][a-z0-9_]*\.sql$/;

/** The folder of PostgreSQL's database functions, inside its migrations folder `dir`. */
export function functionsDirOf(dir: string): string {
  return `${dir.endsWith("/") ? dir : `${dir}/`}functions/`;
}

/**
 * Reads the database function files of migrations folder `dir` (its `functions/`), keyed
 * `functions/<name>.sql` as a MigrationFiles source carries them; none when there is no such
 * folder (SQLite's).
 */
export async function readFunctionFiles(dir: string): Promise<MigrationFiles> {
  const folder = functionsDirOf(dir);
  const files: Record<string, string> = {};
  const names = await readdir(folder).catch(() => [] as string[]);
  for (const file of names) {
    if (FUNCTION_FILE.test(file)) {
      files[`functions/${file}`] = await readFile(`${folder}${file}`, "utf8");
    }
  }
  return files;
}

/** The function files of a MigrationFiles source: `functions/<name>.sql` → text. */
function functionsOf(files: MigrationFiles): [string, string][] {
  return Object.entries(files)
    .filter(([name]) => name.startsWith("functions/") && FUNCTION_FILE.test(name.slice(10)))
    .sort(([a], [b]) => (a < b ? -1 : 1));
}

/** The migrator's record of each function file applied and its text's SHA-256. */
const FUNCTIONS_TABLE = "ledger_functions";

/**
 * Applies each database function file whose text changed since it was last applied (or that
 * never was), in file name order, in one transaction with its record (table `ledger_functions`:
 * name, sha256, applied_at_ms). A file holds `CREATE OR REPLACE FUNCTION` of one function,
 * preceded by `DROP FUNCTION IF EXISTS` of a signature it replaces; PostgreSQL checks a `LANGUAGE
 * sql` function's body at creation, so such a function's file sorts after the files of the
 * functions it calls. PostgreSQL only; the caller holds the migrator's lock.
 * @param files the function files (`functions/<name>.sql` → text; other entries are ignored)
 * @returns the file names applied now (`functions/<name>.sql`), in order
 * @throws Error when a file fails (nothing of this run is kept)
 */
export async function applyFunctions(db: Kysely<DB>, files: MigrationFiles): Promise<string[]> {
  const wanted = functionsOf(files);
  if (wanted.length === 0) return [];
  await sql`CREATE TABLE IF NOT EXISTS ${sql.table(FUNCTIONS_TABLE)} (
    name TEXT PRIMARY KEY, sha256 TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)`.execute(db);
  const applied = await sql<{ name: string; sha256: string }>`
    SELECT name, sha256 FROM ${sql.table(FUNCTIONS_TABLE)}`.execute(db);
  const known = new Map(applied.rows.map((r) => [r.name, r.sha256]));
  const hashed = wanted.map(([name, text]) => ({
    name,
    text,
    sha256: createHash("sha256").update(text).digest("hex"),
  }));
  const changed = hashed.filter((f) => known.get(f.name) !== f.sha256);
  if (changed.length === 0) return [];
  await db.transaction().execute(async (trx) => {
    for (const f of changed) {
      await sql.raw(f.text).execute(trx);
      await sql`INSERT INTO ${sql.table(FUNCTIONS_TABLE)} (name, sha256, applied_at_ms)
        VALUES (${f.name}, ${f.sha256}, ${Date.now()})
        ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256,
          applied_at_ms = excluded.applied_at_ms`.execute(trx);
    }
  });
  return changed.map((f) => f.name);
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
    const own = name.slice(prefix.length);
    if (name.startsWith(prefix) && (MIGRATION_FILE.test(own) || own.startsWith("functions/"))) {
      files[own] = text;
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
 * the embedded migrations when the program carries them, else the repository's `sql/`. On
 * PostgreSQL the database function files of the source (a folder's `functions/`, or the
 * `functions/<name>.sql` entries of the files) follow, each when its text changed
 * (`applyFunctions`), with the `generated` ones: database code built from TypeScript by a layer
 * above (the admission rule's functions, src/admission/postgres.ts), keyed and applied the same
 * way.
 * @returns the names of the migrations applied now (the function files not included).
 * @throws Error when a migration fails (the failed one is rolled back).
 */
export async function migrateToLatest(
  db: Kysely<DB>,
  source?: string | MigrationFiles,
  generated: MigrationFiles = {},
): Promise<string[]> {
  const engine = engineOf(db);
  const files = source ?? embeddedMigrations(engine) ?? migrationsDirOf(engine);
  const load = typeof files === "string" ? () => readMigrationFiles(files) : async () => files;
  const loadFunctions =
    typeof files === "string" ? () => readFunctionFiles(files) : async () => files;
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
      const applied = await migrate(conn);
      await applyFunctions(conn, { ...(await loadFunctions()), ...generated });
      return applied;
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
      await sql`RESET statement_timeout`.execute(conn);
      await sql`RESET lock_timeout`.execute(conn);
    }
  });
}
