/**
 * Run-wide set-up of the test suite (vitest's globalSetup): nothing before the run; after it, the
 * migrated templates of this run (test/templates.ts) are removed, the SQLite files and, when the
 * suite ran on PostgreSQL, the template database with whatever copies of it are left (a test
 * process's spare, drops still queued when it ended).
 */
import { rmSync } from "node:fs";
import pg from "pg";
import { dropPgDatabase } from "./pg-harness.ts";
import { PG_COPY_PREFIX, PG_TEMPLATE, TEMPLATE_DIR } from "./templates.ts";

export default function setup(): () => Promise<void> {
  return async () => {
    rmSync(TEMPLATE_DIR, { recursive: true, force: true });
    const url = process.env.LEDGER_TEST_PG_URL;
    if (!url) return;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $2)",
        [PG_TEMPLATE, PG_COPY_PREFIX],
      );
      for (const { datname } of rows) await dropPgDatabase(datname);
    } finally {
      await client.end();
    }
  };
}
