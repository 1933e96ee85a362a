/**
 * The grouped usage summary (`GET /v1/usage?summary=true&groupBy=…`, docs/api.md#usage-over-time)
 * at millions of usage records: fills a fresh database with N million records, then times the
 * summary of each `groupBy` over a year, over 30 days, and of one account over 30 days (what
 * the console asks), and prints each query plan. Results: docs/operations.md#usage-summaries.
 *
 *   npm run build && node dist/scripts/bench-usage-groups.js [--millions 2] [--engine sqlite|postgres|both]
 *     [--drop-index NAME]…
 *
 * SQLite runs on a temporary file; PostgreSQL on a fresh database of the cluster at
 * LEDGER_TEST_PG_URL (`eval "$(scripts/pg-cluster.sh start)"`), dropped at the end.
 * `--drop-index` drops an index after the fill (to compare plans with and without it).
 *
 * The records: a project with 900 accounts and 9 in 10 records, a small project with 100
 * accounts and the other records (interleaved), 12 models, 1 in 10 records `system` usage
 * without an account, spread evenly over the 365 days before now. Each timing is the median
 * of 3 runs after one warm-up, through the service's own `summarizeUsage` on the read connection.
 * It also times 2,000 usage records written through the write path (one write unit each, from
 * 10 concurrent writers), the cost the indexes add to `POST /v1/usage/record`.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CompiledQuery, type Kysely, sql } from "kysely";
import pg from "pg";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import { engineOf } from "../src/db/engine.ts";
import { UNBOUNDED_STATEMENT } from "../src/db/postgres.ts";
import type { DB } from "../src/db/schema.ts";
import type { WriteQueue } from "../src/db/write-path.ts";
import { seedModels } from "../src/models/seed.ts";
import { openLedger } from "../src/runtime.ts";
import { recordUsage, type UsageFilter } from "../src/usage/service.ts";
import { summarizeUsage, type UsageGroupBy, usageSummaryQuery } from "../src/usage/summary.ts";
import { dropDatabase } from "./lib/pg-admin.ts";

const DAY_MS = 86_400_000;
const ACCOUNTS = 900;
const MODELS = 12;
const GROUP_BYS: UsageGroupBy[] = ["day", "model", "account", "context"];

const { values } = parseArgs({
  options: {
    millions: { type: "string", default: "2" },
    engine: { type: "string", default: "both" },
    "drop-index": { type: "string", multiple: true, default: [] },
  },
});
const ROWS = Math.round(Number(values.millions) * 1_000_000);
const NOW = Date.parse("2026-06-30T12:00:00.000Z");

/** Creates the project, its accounts, and ROWS usage records in one INSERT … SELECT. */
interface Projects {
  /** 9 in 10 records, 900 accounts. */
  main: string;
  /** 1 in 10 records, interleaved with the main project's, 100 accounts. */
  small: string;
}

async function fill(db: Kysely<DB>, projects: Projects, models: string[]): Promise<void> {
  await db.connection().execute(async (conn) => {
    // PostgreSQL: the fill and ANALYZE take longer than the service's statement timeout.
    if (engineOf(db) === "postgres") {
      await sql.raw(`${UNBOUNDED_STATEMENT}SET statement_timeout = 0`).execute(conn);
    }
    await fillOn(conn, projects, models);
    // As autovacuum leaves a table in steady state: statistics, and on PostgreSQL the
    // visibility map that index-only scans need.
    await sql
      .raw(engineOf(db) === "postgres" ? "VACUUM ANALYZE usage_records" : "ANALYZE")
      .execute(conn);
  });
}

function accountRows(projectId: string, prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}${String(i).padStart(5, "0")}`,
    project_id: projectId,
    external_id: `customer-${i}`,
    name: `Customer ${i}`,
    email: "",
    created_at_ms: NOW - 400 * DAY_MS,
    updated_at_ms: NOW - 400 * DAY_MS,
  }));
}

async function fillOn(db: Kysely<DB>, projects: Projects, models: string[]): Promise<void> {
  const pgEngine = engineOf(db) === "postgres";
  await db
    .insertInto("accounts")
    .values(accountRows(projects.main, "acc_bench", ACCOUNTS))
    .execute();
  await db
    .insertInto("accounts")
    .values(accountRows(projects.small, "acc_small", 100))
    .execute();
  const modelCase = `CASE i % ${MODELS} ${models.map((m, k) => `WHEN ${k} THEN '${m}'`).join(" ")} END`;
  const series = pgEngine
    ? `(SELECT g AS i FROM generate_series(0::bigint, ${ROWS - 1}) AS g) AS s`
    : `(WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS - 1}) SELECT i FROM c) AS s`;
  const concat = (a: string, b: string) => (pgEngine ? `${a} || ${b}::text` : `${a} || ${b}`);
  // Account number `of * 7919 % n`, zero-padded (both engines divide integers exactly).
  const pad = (n: number, of: string) =>
    pgEngine ? `lpad((${of} * 7919 % ${n})::text, 5, '0')` : `printf('%05d', ${of} * 7919 % ${n})`;
  const spanMs = 365 * DAY_MS;
  await sql
    .raw(`INSERT INTO usage_records (id, project_id, account_id, context, model_id, usage_type,
      input_tokens, output_tokens, cached_tokens, transaction_id, input_micros_per_m,
      output_micros_per_m, cached_micros_per_m, cost_micro_usd, cost_pico_rem, metadata,
      created_at_ms)
    SELECT ${concat("'use_bench'", "i")},
      CASE WHEN i % 10 = 9 THEN '${projects.small}' ELSE '${projects.main}' END,
      CASE WHEN i % 10 = 0 THEN NULL
        WHEN i % 10 = 9 THEN 'acc_small' || ${pad(100, "(i / 10)")}
        ELSE 'acc_bench' || ${pad(ACCOUNTS, "i")} END,
      CASE WHEN i % 10 = 0 THEN 'system' ELSE 'customer' END,
      ${modelCase}, 'text', 1000 + i % 5000, 200 + i % 700, i % 1000, NULL,
      2500000, 10000000, 1250000, 4000 + i % 30000, i % 1000000, NULL,
      ${NOW - spanMs} + (i * ${Math.floor(spanMs / ROWS)})
    FROM ${series}`)
    .execute(db);
}

const WRITES = 2000;
const WRITERS = 10;

/**
 * Records WRITES usage records, one write unit each, as `POST /v1/usage/record` does, from
 * WRITERS concurrent writers (PostgreSQL's pool holds 10 connections).
 */
async function recordThroughWritePath(queue: WriteQueue, projectId: string): Promise<number> {
  const started = performance.now();
  const writer = async (w: number) => {
    for (let i = w; i < WRITES; i += WRITERS) {
      await queue.run((trx, nowMs) =>
        recordUsage(
          trx,
          projectId,
          {
            context: "customer",
            accountRef: `customer-${i % ACCOUNTS}`,
            modelId: "gpt-4o",
            usageType: "text",
            inputTokens: 1000 + i,
            outputTokens: 500,
            cachedTokens: 0,
          },
          nowMs,
        ),
      );
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return performance.now() - started;
}

/** Median of `runs` timings in ms, after one warm-up. */
async function time(run: () => Promise<unknown>, runs = 3): Promise<number> {
  await run();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  return ms.sort((a, b) => a - b)[Math.floor(runs / 2)] ?? 0;
}

/** The plan of the grouped summary, as the engine explains it. */
async function explain(db: Kysely<DB>, query: CompiledQuery): Promise<string> {
  const pgEngine = engineOf(db) === "postgres";
  const prefix = pgEngine ? "EXPLAIN (ANALYZE, COSTS OFF) " : "EXPLAIN QUERY PLAN ";
  const res = await db.executeQuery<Record<string, unknown>>(
    CompiledQuery.raw(prefix + query.sql, [...query.parameters]),
  );
  return res.rows
    .map((r) =>
      pgEngine
        ? String(r["QUERY PLAN"])
        : `${"  ".repeat(Number(r.parent) > 0 ? 2 : 1)}${String(r.detail)}`,
    )
    .join("\n");
}

type Scenario = [name: string, project: keyof Projects, filter: UsageFilter];

const LAST_30_DAYS = { startMs: NOW - 30 * DAY_MS };
const SCENARIOS: Scenario[] = [
  ["project, 365 days", "main", {}],
  ["project, 30 days", "main", LAST_30_DAYS],
  ["one account, 30 days", "main", { accountId: "acc_bench00042", ...LAST_30_DAYS }],
  ["small project, 365 days", "small", {}],
  ["small project, 30 days", "small", LAST_30_DAYS],
];

/** Prints a table row per scenario and `groupBy`: records summed, groups, median ms. */
async function timeScenarios(read: Kysely<DB>, projects: Projects): Promise<void> {
  process.stdout.write("| query | groupBy | records | groups | ms |\n|---|---|---:|---:|---:|\n");
  for (const [name, project, filter] of SCENARIOS) {
    for (const groupBy of [undefined, ...GROUP_BYS]) {
      let out: Awaited<ReturnType<typeof summarizeUsage>> | undefined;
      let failure = "";
      const ms = await time(async () => {
        try {
          out = await summarizeUsage(read, projects[project], filter, groupBy);
        } catch (err) {
          failure = err instanceof Error ? err.message : String(err);
        }
      });
      const records = out ? Object.values(out.byModel).reduce((n, m) => n + Number(m.count), 0) : 0;
      const groups = failure
        ? `error: ${failure.slice(0, 60)}`
        : String(out?.groups?.length ?? "–");
      process.stdout.write(
        `| ${name} | ${groupBy ?? "(none)"} | ${records.toLocaleString("en")} | ${groups} | ${ms.toFixed(0)} |\n`,
      );
    }
  }
}

/** Prints the plans of a few grouped summaries. */
async function printPlans(read: Kysely<DB>, projects: Projects): Promise<void> {
  const plans: [string, keyof Projects, UsageFilter, UsageGroupBy | undefined][] = [
    ["project, 365 days, no groupBy", "main", {}, undefined],
    ["project, 365 days, groupBy=account", "main", {}, "account"],
    ["project, 30 days, groupBy=day", "main", LAST_30_DAYS, "day"],
    ["one account, 30 days, groupBy=day", "main", SCENARIOS[2]?.[2] ?? {}, "day"],
    ["small project, 365 days, groupBy=model", "small", {}, "model"],
    ["small project, 365 days, groupBy=account", "small", {}, "account"],
  ];
  for (const [name, project, filter, groupBy] of plans) {
    const query = usageSummaryQuery(read, projects[project], filter, groupBy).compile();
    process.stdout.write(`\nPlan, ${name}:\n\n${await explain(read, query)}\n`);
  }
}

async function benchEngine(engine: "sqlite" | "postgres"): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "ledger-bench-usage-"));
  let url = `file:${join(dir, "usage.db")}`;
  let dropPg: (() => Promise<void>) | undefined;
  if (engine === "postgres") {
    const admin = process.env.LEDGER_TEST_PG_URL;
    if (!admin) throw new Error("--engine postgres needs LEDGER_TEST_PG_URL");
    const name = `ledger_bench_usage_${randomBytes(4).toString("hex")}`;
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    const parsed = new URL(admin);
    parsed.pathname = `/${name}`;
    url = parsed.toString();
    dropPg = () => dropDatabase(admin, name);
  }
  const ledger = await openLedger(loadConfig({ DATABASE_URL: url }));
  try {
    await seedModels(ledger.queue);
    const projects: Projects = {
      main: (await createProjectKey(ledger.queue, "bench")).projectId,
      small: (await createProjectKey(ledger.queue, "small")).projectId,
    };
    const models = (
      await ledger.db.read.selectFrom("models").select("model_id").orderBy("model_id").execute()
    )
      .slice(0, MODELS)
      .map((m) => m.model_id);
    const db = ledger.db.write;
    const started = performance.now();
    await fill(db, projects, models);
    const fillS = ((performance.now() - started) / 1000).toFixed(1);
    for (const index of values["drop-index"]) await sql`DROP INDEX ${sql.id(index)}`.execute(db);
    if (values["drop-index"].length > 0) await sql`ANALYZE`.execute(db);
    process.stdout.write(
      `\n## ${engine}: ${ROWS.toLocaleString("en")} usage records (filled in ${fillS} s)` +
        `${values["drop-index"].length ? `, without ${values["drop-index"].join(", ")}` : ""}\n\n`,
    );
    const writeMs = await recordThroughWritePath(ledger.queue, projects.main);
    process.stdout.write(
      `Recording ${WRITES} usage records through the write path: ${writeMs.toFixed(0)} ms (${((writeMs * 1000) / WRITES).toFixed(0)} µs each)\n\n`,
    );
    await timeScenarios(ledger.db.read, projects);
    await printPlans(ledger.db.read, projects);
  } finally {
    await ledger.close();
    await dropPg?.();
    if (process.env.KEEP_BENCH_DB) process.stdout.write(`kept ${url}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

const engines: ("sqlite" | "postgres")[] =
  values.engine === "both" ? ["sqlite", "postgres"] : [values.engine as "sqlite" | "postgres"];
for (const engine of engines) await benchEngine(engine);
