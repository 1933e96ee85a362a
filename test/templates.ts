/**
 * Migrated templates: a test ledger (test/harness.ts) starts from a copy of a database that this
 * test run's own migrator brought to the latest schema once, with the shipped model catalog
 * seeded, rather than migrating and seeding an empty one every time. That took most of a test's
 * own time on PostgreSQL (about 0.3 s of 0.5 s) and on remote libSQL (0.6 s of 1 s); copying a
 * template takes a fraction of that. Tests of the migrations themselves, of seeding, and of a
 * first start keep `freshDatabase` (an empty database).
 *
 * One template per engine and test run (`LEDGER_TEST_RUN`, set by vitest.config.ts), so a change
 * of the migrations is never served a template of an older schema:
 * - the embedded file and remote libSQL: a SQLite file in the temporary directory, put in place
 *   by an atomic rename, so that workers building it at once cannot see half of one;
 * - PostgreSQL: a database `ledger_tmpl_<run>`, built under an advisory lock, each test database
 *   made by `CREATE DATABASE … TEMPLATE`.
 * test/global-setup.ts removes them when the run ends.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { loadConfig } from "../src/config.ts";
import { seedModels } from "../src/models/seed.ts";
import { openLedger } from "../src/runtime.ts";
import {
  createPgDatabase,
  databaseOnFile,
  type FreshDatabase,
  TEST_TARGET,
  testPgUrl,
} from "./pg-harness.ts";

/** This test run's id: names its templates. */
export const TEST_RUN = process.env.LEDGER_TEST_RUN ?? `p${process.pid}`;

/** Where the SQLite templates of this run live. */
export const TEMPLATE_DIR = join(tmpdir(), `ledger-templates-${TEST_RUN}`);

/** The PostgreSQL template database of this run. */
export const PG_TEMPLATE = `ledger_tmpl_${TEST_RUN.replace(/[^a-z0-9]/gi, "")}`;

let built: Promise<string> | undefined;

/** This run's template for this engine: a file path, or a PostgreSQL database name. */
function template(): Promise<string> {
  built ??= TEST_TARGET === "postgres" ? pgTemplate() : sqliteTemplate();
  return built;
}

/**
 * Runs every migration on `env`'s database and seeds the shipped model catalog, then closes it;
 * an embedded file checkpointed, so that the file holds everything without its WAL.
 * @throws Error when the checkpoint could not complete
 */
async function migrate(env: Record<string, string>): Promise<void> {
  const ledger = await openLedger(loadConfig(env));
  await seedModels(ledger.queue);
  const checkpoint = await ledger.closeCheckpointed();
  if (checkpoint !== null && !checkpoint.complete) {
    throw new Error(`the template's checkpoint did not complete: ${checkpoint.error ?? "busy"}`);
  }
}

/**
 * The SQLite template file of this run, built when missing. Remote libSQL's databases are SQLite
 * files with the same migrations, so both take it; it is migrated as an embedded file, whose
 * checkpoint leaves the file alone holding everything (the migrations over a Hrana server are
 * tested on empty databases, test/migrator.test.ts).
 */
async function sqliteTemplate(): Promise<string> {
  const path = join(TEMPLATE_DIR, "sqlite.db");
  if (existsSync(path)) return path;
  mkdirSync(TEMPLATE_DIR, { recursive: true });
  const work = mkdtempSync(join(TEMPLATE_DIR, "build-"));
  await migrate({ DATABASE_URL: `file:${join(work, "ledger.db")}` });
  renameSync(join(work, "ledger.db"), path);
  rmSync(work, { recursive: true, force: true });
  return path;
}

/** The PostgreSQL template database of this run, built when missing. */
async function pgTemplate(): Promise<string> {
  const client = new pg.Client({ connectionString: testPgUrl() });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock(hashtext($1))", [PG_TEMPLATE]);
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [PG_TEMPLATE]);
    if (found.rowCount === 0) {
      const building = await createPgDatabase();
      await migrate({ DATABASE_URL: building.url });
      const name = new URL(building.url).pathname.slice(1);
      await client.query(`ALTER DATABASE ${name} RENAME TO ${PG_TEMPLATE}`);
    }
    return PG_TEMPLATE;
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext($1))", [PG_TEMPLATE]).catch(() => {});
    await client.end();
  }
}

/** The prefix of the databases this run copies from its template. */
export const PG_COPY_PREFIX = `ledger_c_${TEST_RUN.replace(/[^a-z0-9]/gi, "")}_`;

/** A PostgreSQL database copied from this run's template; `drop` drops it at once. */
async function pgCopy(): Promise<FreshDatabase> {
  const { url, drop } = await createPgDatabase({
    template: await template(),
    prefix: PG_COPY_PREFIX,
  });
  return { url, env: { DATABASE_URL: url }, drop };
}

/**
 * The copy the next test ledger takes, made while the current test runs, and the drops of the
 * copies of the tests before, made one after another in the background: the copy (about 0.2 s)
 * and the drop (about 0.1 s) then cost a test nothing but a little of the database's time. What
 * is still pending when the test process ends, test/global-setup.ts drops with the template.
 */
let spare: Promise<FreshDatabase> | undefined;
let drops: Promise<void> = Promise.resolve();

/** A copy of the template for a test ledger; its `drop` queues the drop and returns at once. */
async function pgTestCopy(): Promise<FreshDatabase> {
  const taken = spare ?? pgCopy();
  spare = pgCopy();
  spare.catch(() => {});
  const copy = await taken;
  return {
    ...copy,
    drop: async () => {
      drops = drops.then(copy.drop, copy.drop);
    },
  };
}

/**
 * A database of this test run at the latest schema, its model catalog seeded and nothing else in
 * it: a copy of the run's template
 * (the file, or a database made from it), with a Hrana test server over it on remote libSQL.
 * @returns what `freshDatabase` returns
 */
export async function migratedDatabase(dir: string): Promise<FreshDatabase> {
  if (TEST_TARGET === "postgres") return pgTestCopy();
  const path = join(dir, "ledger.db");
  copyFileSync(await template(), path);
  return databaseOnFile(path);
}
