/**
 * The two engines' schemas stay one schema (docs/design.md, "Engines"): every SQLite migration
 * has its PostgreSQL twin of the same name, both produce the same tables, columns and
 * nullability, and PostgreSQL refuses what SQLite refuses (CHECKs, the append-only ledger).
 * The migration pairing runs on both engines; the rest needs PostgreSQL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { migrationsDirOf, readMigrationFiles } from "../src/db/migrator.ts";
import { openLedger } from "../src/runtime.ts";
import { fundedAccount, makeLedger } from "./harness.ts";
import { TEST_ENGINE } from "./pg-harness.ts";

type Column = { table: string; column: string; nullable: boolean };

const byName = (a: Column, b: Column) =>
  `${a.table}.${a.column}` < `${b.table}.${b.column}` ? -1 : 1;

describe("one schema on two engines", () => {
  it("has a PostgreSQL migration for every SQLite migration, by the same name", async () => {
    const sqlite = Object.keys(await readMigrationFiles(migrationsDirOf("sqlite"))).sort();
    const postgres = Object.keys(await readMigrationFiles(migrationsDirOf("postgres"))).sort();
    expect(sqlite.length).toBeGreaterThan(0);
    expect(postgres).toEqual(sqlite);
  });

  it.runIf(TEST_ENGINE === "postgres")("creates the same tables and columns", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-schema-"));
    const lite = await openLedger(loadConfig({ DATABASE_URL: `file:${join(dir, "s.db")}` }));
    const t = await makeLedger();
    try {
      const tables = await sql<{ name: string }>`
        SELECT name FROM sqlite_master
        WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'kysely_%'`.execute(
        lite.db.read,
      );
      const sqliteColumns: Column[] = [];
      for (const { name } of tables.rows) {
        const info = await sql<{ name: string; notnull: number; pk: number }>`
          SELECT name, "notnull", pk FROM pragma_table_info(${name})`.execute(lite.db.read);
        for (const c of info.rows) {
          sqliteColumns.push({
            table: name,
            column: c.name,
            nullable: c.notnull === 0 && c.pk === 0,
          });
        }
      }
      const pg = await sql<{ table_name: string; column_name: string; is_nullable: string }>`
        SELECT table_name, column_name, is_nullable FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name NOT LIKE 'kysely_%'
          AND table_name <> 'ledger_functions'`.execute(t.ledger.db.read);
      const pgColumns = pg.rows.map((c) => ({
        table: c.table_name,
        column: c.column_name,
        nullable: c.is_nullable === "YES",
      }));
      expect(pgColumns.sort(byName)).toEqual(sqliteColumns.sort(byName));
    } finally {
      await t.close();
      await lite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(TEST_ENGINE === "postgres")(
    "refuses a negative balance and any change to the ledger",
    async () => {
      const t = await makeLedger();
      try {
        const id = await fundedAccount(t, "a", 5);
        const db = t.ledger.db.write;
        await expect(
          db.updateTable("accounts").set({ balance_micros: -1 }).where("id", "=", id).execute(),
        ).rejects.toThrow(/check constraint/);
        await expect(
          db.updateTable("transactions").set({ description: "x" }).execute(),
        ).rejects.toThrow(/transactions are immutable/);
        await expect(db.deleteFrom("transactions").execute()).rejects.toThrow(
          /transactions are immutable/,
        );
        await expect(sql`TRUNCATE transactions CASCADE`.execute(db)).rejects.toThrow(
          /transactions are immutable/,
        );
        expect(await t.verify()).toEqual([]);
      } finally {
        await t.close();
      }
    },
  );
});
