/**
 * Migrations are all or nothing (src/db/migrator.ts): a run that fails part-way leaves no table
 * of the failed file behind and records nothing, so the next start applies the fixed file from
 * the beginning. On every engine (on SQLite through TransactionalDdlSqliteAdapter).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../src/db/client.ts";
import { migrateToLatest } from "../src/db/migrator.ts";
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
});
