/**
 * Which engine the test suite runs on, and a fresh database of it for each test ledger.
 *
 * `LEDGER_TEST_ENGINE=postgres` with `LEDGER_TEST_PG_URL` (a role that may create databases,
 * e.g. from `scripts/pg-cluster.sh start`) runs every test on PostgreSQL: each ledger gets its
 * own database, created from that URL and dropped when the ledger closes.
 * `LEDGER_TEST_ENGINE=libsql` runs every test on remote libSQL: each ledger gets its own Hrana
 * test server (scripts/lib/hrana/, built into dist/ by `npm run build`) on a free loopback port,
 * over a fresh file, with a token, stopped when the ledger closes; the servers of one test
 * process run in one child process (scripts/hrana-host.ts). Otherwise each
 * ledger gets a fresh SQLite file. Tests of the embedded file itself (PRAGMAs, drivers, backups)
 * run only there and say so with `sqliteOnly`.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { startHostedServer } from "../scripts/lib/hrana/host.ts";
import type { Engine } from "../src/db/engine.ts";

/** Where this test run's databases live: the embedded file, remote libSQL, or PostgreSQL. */
export type TestTarget = "sqlite" | "libsql" | "postgres";

/** The target of this test run (LEDGER_TEST_ENGINE). */
export const TEST_TARGET: TestTarget =
  process.env.LEDGER_TEST_ENGINE === "postgres"
    ? "postgres"
    : process.env.LEDGER_TEST_ENGINE === "libsql"
      ? "libsql"
      : "sqlite";

/** The SQL engine of this test run: remote libSQL is SQLite too. */
export const TEST_ENGINE: Engine = TEST_TARGET === "postgres" ? "postgres" : "sqlite";

/** True on the embedded file: for `describe.runIf(sqliteOnly)` around tests of the file itself. */
export const sqliteOnly = TEST_TARGET === "sqlite";

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

/**
 * Creates a PostgreSQL database, empty or a copy of `template`, named `prefix` (default
 * `ledger_t_`) and a random suffix. @returns its URL and how to drop it
 */
export async function createPgDatabase(
  options: { template?: string; prefix?: string } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${options.prefix ?? "ledger_t_"}${process.pid}_${randomBytes(6).toString("hex")}`;
  const from = options.template === undefined ? "" : ` TEMPLATE ${options.template}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}${from}`));
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
export async function dropPgDatabase(name: string): Promise<void> {
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

/** A fresh database of the test run: its DATABASE_URL, its environment, how to remove it. */
export interface FreshDatabase {
  url: string;
  /** DATABASE_URL, and DATABASE_AUTH_TOKEN for remote libSQL. */
  env: { DATABASE_URL: string; DATABASE_AUTH_TOKEN?: string };
  drop: () => Promise<void>;
}

/**
 * A fresh database of the test run: a new file in `dir`, a Hrana test server over a new file in
 * `dir` (`dir/ledger.db`), or a new PostgreSQL database.
 */
export async function freshDatabase(dir: string): Promise<FreshDatabase> {
  if (TEST_TARGET === "postgres") {
    const { url, drop } = await createPgDatabase();
    return { url, env: { DATABASE_URL: url }, drop };
  }
  return databaseOnFile(join(dir, "ledger.db"));
}

/**
 * The SQLite file `path` as this run's database: the file itself, or on remote libSQL a Hrana
 * test server over it, with a token, stopped by `drop`.
 */
export async function databaseOnFile(path: string): Promise<FreshDatabase> {
  if (TEST_TARGET === "libsql") {
    const token = `hrana_${randomBytes(12).toString("hex")}`;
    // NORMAL: the server outlives every test, so only its own crash could lose a commit. It runs
    // in this process's Hrana host, beside the servers of this worker's earlier tests.
    const server = await startHostedServer({ path, token, synchronous: "NORMAL" });
    return {
      url: server.url,
      env: { DATABASE_URL: server.url, DATABASE_AUTH_TOKEN: token },
      drop: server.stop,
    };
  }
  const url = `file:${path}`;
  return { url, env: { DATABASE_URL: url }, drop: async () => {} };
}
