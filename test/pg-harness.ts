/**
 * Which engine the test suite runs on, and a fresh database of it for each test ledger.
 *
 * `LEDGER_TEST_ENGINE=postgres` with `LEDGER_TEST_PG_URL` (a role that may create databases,
 * e.g. from `scripts/pg-cluster.sh start`) runs every test on PostgreSQL: each ledger gets its
 * own database, created from that URL and dropped when the ledger closes. Otherwise each ledger
 * gets a fresh SQLite file. Tests of SQLite itself (PRAGMAs, drivers, the database file) run
 * only on SQLite and say so with `sqliteOnly`.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import type { Engine } from "../src/db/engine.ts";

/** The engine of this test run. */
export const TEST_ENGINE: Engine =
  process.env.LEDGER_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";

/** True on SQLite: for `describe.runIf(sqliteOnly)` around tests of SQLite itself. */
export const sqliteOnly = TEST_ENGINE === "sqlite";

/** The admin URL of the PostgreSQL test cluster. @throws Error when it is not set */
export function testPgUrl(): string {
  const url = process.env.LEDGER_TEST_PG_URL;
  if (!url) {
    throw new Error(
      "LEDGER_TEST_ENGINE=postgres needs LEDGER_TEST_PG_URL (see scripts/pg-cluster.sh start)",
    );
  }
  return url;
}

/** `url` with another database name. */
export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testPgUrl() });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty PostgreSQL database. @returns its URL and how to drop it */
export async function createPgDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `ledger_t_${process.pid}_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  return {
    url: withDatabase(testPgUrl(), name),
    drop: () => dropPgDatabase(name),
  };
}

/**
 * Drops a test database. FORCE ends the ledger's own sessions, but not a session of the cluster's
 * own (an autovacuum worker that has just started there): that refusal is retried, and a
 * database still left after that stays behind in the throwaway cluster rather than fail a test.
 */
async function dropPgDatabase(name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      return;
    } catch (err) {
      if (attempt >= 10) {
        process.stderr.write(`test database ${name} left behind: ${(err as Error).message}\n`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

/**
 * A fresh database of the test engine: a new file in `dir`, or a new PostgreSQL database.
 * @returns its DATABASE_URL and how to remove it
 */
export async function freshDatabase(
  dir: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  if (TEST_ENGINE === "postgres") return createPgDatabase();
  return { url: `file:${join(dir, "ledger.db")}`, drop: async () => {} };
}
