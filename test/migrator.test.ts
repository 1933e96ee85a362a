/**
 * Migrations are all or nothing (src/db/migrator.ts): a run that fails part-way leaves no table
 * of the failed file behind and records nothing, so the next start applies the fixed file from
 * the beginning. On every engine (on SQLite through TransactionalDdlSqliteAdapter). PostgreSQL's
 * database functions: one file each, created nowhere else, applied again exactly when their text
 * changes (docs/design.md#database-functions).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { admissionFunctions } from "../src/admission/postgres.ts";
import { type Database, openDatabase } from "../src/db/client.ts";
import {
  functionsDirOf,
  migrateToLatest,
  migrationsDirOf,
  readFunctionFiles,
  readMigrationFiles,
} from "../src/db/migrator.ts";
import { type FreshDatabase, freshDatabase, TEST_ENGINE } from "./pg-harness.ts";

describe("migrations", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function open(): Promise<Database> {
    const dir = mkdtempSync(join(tmpdir(), "ledger-migrator-"));
    const database: FreshDatabase = await freshDatabase(dir);
    const db = await openDatabase({
      url: database.url,
      authToken: database.env.DATABASE_AUTH_TOKEN,
      driver: "auto",
      synchronous: "NORMAL",
    });
    cleanups.push(async () => {
      await db.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    });
    return db;
  }

  const tables = async (db: Database) => {
    const query =
      TEST_ENGINE === "postgres"
        ? sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
            WHERE table_schema = 'public' AND table_name LIKE 'm\\_%' ORDER BY 1`
        : sql<{ name: string }>`SELECT name FROM sqlite_master
            WHERE type = 'table' AND name LIKE 'm\\_%' ESCAPE '\\' ORDER BY 1`;
    return (await query.execute(db.read)).rows.map((r) => r.name);
  };

  it("leaves nothing of a run that fails part-way, and applies the fixed files later", async () => {
    const db = await open();
    const first = "CREATE TABLE m_one (x INTEGER);\n";
    const broken =
      "CREATE TABLE m_two (x INTEGER);\nCREATE TABLE m_three (y INTEGER);\nCREATE TABLE m_two (z INTEGER);\n";
    await expect(
      migrateToLatest(db.write, { "0001_one.sql": first, "0002_two.sql": broken }),
    ).rejects.toThrow(/m_two/);
    expect(await tables(db)).toEqual([]);

    const fixed = "CREATE TABLE m_two (x INTEGER);\nCREATE TABLE m_three (y INTEGER);\n";
    expect(
      await migrateToLatest(db.write, { "0001_one.sql": first, "0002_two.sql": fixed }),
    ).toEqual(["0001_one", "0002_two"]);
    expect(await tables(db)).toEqual(["m_one", "m_three", "m_two"]);
  });

  it.runIf(TEST_ENGINE === "postgres")(
    "applies a function file when its text changes, and only then, after the migrations",
    async () => {
      const db = await open();
      const fn = (answer: number) =>
        `CREATE OR REPLACE FUNCTION m_answer() RETURNS INT LANGUAGE sql AS $$ SELECT ${answer} $$;\n`;
      const schema = { "0001_one.sql": "CREATE TABLE m_one (x INTEGER);\n" };
      const answer = async () =>
        (await sql<{ a: number }>`SELECT m_answer() AS a`.execute(db.read)).rows[0]?.a;
      const applied = async () =>
        (
          await sql<{ name: string }>`SELECT name FROM ledger_functions ORDER BY name`.execute(
            db.read,
          )
        ).rows.map((r) => r.name);
      expect(
        await migrateToLatest(db.write, { ...schema, "functions/m_answer.sql": fn(1) }),
      ).toEqual(["0001_one"]);
      expect(await answer()).toBe(1);
      expect(await applied()).toEqual(["functions/m_answer.sql"]);
      // Unchanged: not applied again (a function dropped by hand stays dropped).
      await sql`DROP FUNCTION m_answer()`.execute(db.write);
      await migrateToLatest(db.write, { ...schema, "functions/m_answer.sql": fn(1) });
      await expect(answer()).rejects.toThrow(/m_answer/);
      // Changed text: applied again.
      await migrateToLatest(db.write, { ...schema, "functions/m_answer.sql": fn(2) });
      expect(await answer()).toBe(2);
      // A file that fails keeps nothing of its run, and the migration list says what it did.
      const broken = { ...schema, "functions/m_answer.sql": `${fn(3)}SELECT no_such_thing();\n` };
      await expect(migrateToLatest(db.write, broken)).rejects.toThrow(/no_such_thing/);
      expect(await answer()).toBe(2);
    },
  );

  it.runIf(TEST_ENGINE === "postgres")(
    "the service's functions as applied are exactly their files, with nothing left over",
    async () => {
      const db = await open();
      await migrateToLatest(db.write, undefined, admissionFunctions());
      const files = {
        ...(await readFunctionFiles(migrationsDirOf("postgres"))),
        ...admissionFunctions(),
      };
      const names = Object.keys(files).map((f) => f.slice("functions/".length, -".sql".length));
      const live = await sql<{ name: string; n: number }>`
        SELECT proname AS name, count(*)::int AS n FROM pg_proc p
        JOIN pg_namespace ns ON ns.oid = p.pronamespace
        WHERE ns.nspname = 'public' AND proname LIKE 'ledger\_%'
        GROUP BY proname ORDER BY proname`.execute(db.read);
      // One function (one signature) per file: no overload left behind by a changed signature.
      expect(live.rows).toEqual(names.sort().map((name) => ({ name, n: 1 })));
      const applied = await sql<{ name: string }>`SELECT name FROM ledger_functions`.execute(
        db.read,
      );
      expect(applied.rows.map((r) => r.name).sort()).toEqual(Object.keys(files).sort());
    },
  );
});

describe("database functions: one file each", () => {
  const pgDir = migrationsDirOf("postgres");
  const CREATES = /^\s*CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)/gim;

  it("each function of the service is created in exactly one file, its own, and no migration re-creates one", async () => {
    const migrations = await readMigrationFiles(pgDir);
    const functions = readdirSync(functionsDirOf(pgDir)).filter((f) => f.endsWith(".sql"));
    expect(functions.length).toBeGreaterThan(0);
    const createdBy = new Map<string, string[]>();
    const note = (name: string, file: string) =>
      createdBy.set(name, [...(createdBy.get(name) ?? []), file]);
    for (const [file, text] of Object.entries(migrations)) {
      for (const [, name = ""] of text.matchAll(CREATES)) note(name, file);
    }
    for (const file of functions) {
      const text = readFileSync(`${functionsDirOf(pgDir)}${file}`, "utf8");
      const created = [...text.matchAll(CREATES)].map(([, name]) => name);
      expect(created, file).toEqual([file.slice(0, -".sql".length)]);
      note(created[0] ?? "", `functions/${file}`);
      // No hand-off through session settings between functions.
      expect(text, file).not.toMatch(/set_config|current_setting/);
    }
    // The admission rule's functions are generated from TypeScript, each once.
    for (const [file, text] of Object.entries(admissionFunctions())) {
      const created = [...text.matchAll(CREATES)].map(([, name]) => name);
      expect(created, file).toEqual([file.slice("functions/".length, -".sql".length)]);
      note(created[0] ?? "", file);
    }
    for (const [name, files] of createdBy) expect(files, name).toHaveLength(1);
    // The migrations create only the schema's trigger functions, never the service's ledger_*.
    for (const name of createdBy.keys()) {
      if (name.startsWith("ledger_")) {
        expect(createdBy.get(name), name).toEqual([`functions/${name}.sql`]);
      }
    }
  });
});
