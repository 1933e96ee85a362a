/**
 * `npm run bench`: the service's throughput and latency on this machine
 * (docs/operations.md#performance).
 *
 * Starts the built service on a fresh database file with 1,000 funded accounts and a bare Hono
 * ceiling app, each in its own process, then drives each scenario with autocannon (in this
 * process) for BENCH_SECONDS (10) after a 2 s warm-up at 50 connections. Prints req/s, p50, p99,
 * errors and req/s as a fraction of the ceiling; then stops the service, runs `ledger verify`,
 * and checks that the ledger holds exactly one row per successful write. Results also go to
 * bench-results/bench-<time>.json.
 *
 * `npm run bench -- --libsql` (or BENCH_ENGINE=libsql) does the same against remote libSQL: a Hrana
 * test server process (scripts/lib/hrana/) over a fresh file, and prints for each scenario the
 * round trips to the server per answered request (from the server's log of its pipelines).
 *
 * `npm run bench -- --postgres` (or BENCH_ENGINE=postgres) does the same on a fresh database of
 * the PostgreSQL cluster at LEDGER_TEST_PG_URL (`eval "$(scripts/pg-cluster.sh start)"`), with
 * one service process and then two (the 50 connections split between them, their req/s summed,
 * the worse of their latencies shown); then runs `pgbench` with the deduction's own SQL on the
 * same database (scripts/lib/pgbench.ts), with 10 connections (one process's pool) and 50.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import LibsqlDatabase from "libsql";
import pg from "pg";
import {
  ACCOUNTS,
  BATCH_SIZE,
  balanceRead,
  batchDeduct,
  cpuOf,
  deduct,
  fund,
  type Requests,
  reserveConfirm,
  setCreditPrice,
  startProcess as start,
  stopProcess as stop,
  transactionsPage,
  usageDeduct,
  usageRecord,
} from "./lib/bench-kit.ts";
import { limitedDeduct, seedLimited } from "./lib/bench-limits.ts";
import { memberDeduct, seedMembers } from "./lib/bench-members.ts";
import { reversal, reversalPool, seedForWarmup, topUp } from "./lib/bench-reversal.ts";
import { spawnHranaServer } from "./lib/hrana/process.ts";
import { dropDatabase } from "./lib/pg-admin.ts";
import { runPgbench } from "./lib/pgbench.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
/**
 * BENCH_SCENARIOS (comma-separated: limits, member-deduct, usage-deduct, batch, usage-record,
 * reversal) keeps
 * only those of the optional scenarios; deduct, reserve+confirm, balance read and transactions
 * page always run. Unset: all of them. Comparing with an older build means running the scenarios
 * it had, in the same order, on a database seeded the same way
 * (docs/benchmarks.md#running-the-bench). The reversal scenario runs last in each round of
 * service processes, so the others run as they did before it.
 */
const SCENARIOS = process.env.BENCH_SCENARIOS?.split(",").map((name) => name.trim());
const wanted = (name: string) => SCENARIOS === undefined || SCENARIOS.includes(name);
const CONNECTIONS = 50;
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const cli = here("../src/cli/index.js");
const dir = mkdtempSync(join(tmpdir(), "ledger-bench-"));
const dbFile = join(dir, "bench.db");
const apiKey = `ldg_bench_${randomBytes(16).toString("hex")}`;
const ENGINE: "sqlite" | "postgres" | "libsql" =
  process.argv.includes("--postgres") || process.env.BENCH_ENGINE === "postgres"
    ? "postgres"
    : process.argv.includes("--libsql") || process.env.BENCH_ENGINE === "libsql"
      ? "libsql"
      : "sqlite";
/** The Hrana test server's log of a `--libsql` run: one line per pipeline (round trip). */
const hranaLog = join(dir, "hrana.log");

interface Row {
  scenario: string;
  /** `--libsql`: round trips to the server per answered request. */
  roundTrips?: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  ok: number;
  ofCeiling?: number;
  /** CPU the service processes spent per operation in the measured run, in µs. */
  serviceCpuUsPerOp?: number;
}

/** The service processes' pids, whose CPU each scenario's row reports. */
const servicePids: number[] = [];

const json = (body: unknown) => JSON.stringify(body);

/**
 * Drives every URL at once for `seconds`, the connections split between them.
 * @returns req/s summed, the worst p50 and p99 of them, errors and 2xx answers summed
 */
async function drive(
  urls: string[],
  requests: Requests,
  seconds: number,
  connections = CONNECTIONS,
  timeoutSeconds = 10,
) {
  const runs = await Promise.all(
    urls.map((url) =>
      autocannon({
        url,
        connections: Math.ceil(connections / urls.length),
        duration: seconds,
        timeout: timeoutSeconds,
        headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
        requests,
      }),
    ),
  );
  const sum = (f: (r: autocannon.Result) => number) => runs.reduce((n, r) => n + f(r), 0);
  return {
    reqPerSec: sum((r) => r.requests.average),
    p50Ms: Math.max(...runs.map((r) => r.latency.p50)),
    p99Ms: Math.max(...runs.map((r) => r.latency.p99)),
    errors: sum((r) => r.errors + r.non2xx + r.timeouts),
    ok: sum((r) => r["2xx"]),
  };
}

/** Round trips the Hrana test server has answered so far (`--libsql`), else 0. */
function pipelines(): number {
  if (ENGINE !== "libsql" || !existsSync(hranaLog)) return 0;
  return readFileSync(hranaLog, "utf8")
    .split("\n")
    .filter((l) => l.includes('"pipeline"')).length;
}

/**
 * Runs a warm-up and a measured run; `perOp` divides req/s for multi-request scenarios, and
 * `opsPerRequest` multiplies it for batches (the row's rate is then operations per second);
 * `connections` replaces the 50, `timeoutSeconds` autocannon's 10 s per request; `settle` runs
 * between the two (batches: the warm-up's requests autocannon stopped waiting for are still
 * running in the service, and would otherwise be measured as the run's own work).
 */
async function scenario(
  name: string,
  target: string | string[],
  requests: Requests,
  perOp = 1,
  options: {
    opsPerRequest?: number;
    connections?: number;
    timeoutSeconds?: number;
    settle?: () => Promise<void>;
  } = {},
): Promise<Row> {
  const urls = typeof target === "string" ? [target] : target;
  const pipelinesBefore = pipelines();
  const { opsPerRequest = 1, connections = CONNECTIONS, timeoutSeconds } = options;
  const warm = await drive(urls, requests, WARMUP_SECONDS, connections, timeoutSeconds);
  await options.settle?.();
  const cpuBefore = servicePids.reduce((sum, pid) => sum + cpuOf(pid), 0);
  const r = await drive(urls, requests, SECONDS, connections, timeoutSeconds);
  const cpuSeconds = servicePids.reduce((sum, pid) => sum + cpuOf(pid), 0) - cpuBefore;
  const ops = (r.ok * opsPerRequest) / perOp;
  const row = {
    scenario: name,
    reqPerSec: Math.round((r.reqPerSec * opsPerRequest) / perOp),
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    errors: r.errors,
    ok: r.ok + warm.ok,
    ...(name.startsWith("ceiling") || ops === 0
      ? {}
      : { serviceCpuUsPerOp: Math.round((cpuSeconds * 1e6) / ops) }),
    ...(ENGINE === "libsql" && !name.startsWith("ceiling")
      ? { roundTrips: Math.round(((pipelines() - pipelinesBefore) / (r.ok + warm.ok)) * 10) / 10 }
      : {}),
  };
  process.stdout.write(
    `  ${name}: ${row.reqPerSec} /s, p99 ${row.p99Ms} ms, errors ${row.errors}\n`,
  );
  return row;
}

/** The service's count of 200 answers per write route, from GET /metrics. */
async function acknowledgedWrites(base: string) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const count = (route: string) => {
    const line = text
      .split("\n")
      .find(
        (l) =>
          l.startsWith("ledger_http_requests_total{") &&
          l.includes(`route="${route}"`) &&
          l.includes('status="200"'),
      );
    return line ? Number(line.split(" ").at(-1)) : 0;
  };
  // Write transactions that did not commit (PostgreSQL: each conflict retried, or a 503).
  const failed = text
    .split("\n")
    .find((l) => l.startsWith('ledger_write_batch_duration_seconds_count{outcome="failed"}'));
  return {
    add: count("/v1/accounts/credits/add"),
    deduct: count("/v1/accounts/credits/deduct"),
    confirm: count("/v1/reservations/confirm"),
    usage: count("/v1/usage/record"),
    batch: count("/v1/batch"),
    reverse: count("/v1/transactions/reverse"),
    failedTransactions: failed ? Number(failed.split(" ").at(-1)) : 0,
  };
}

/** Waits until no service of `urls` has a write waiting or running (`ledger_write_queue_depth`). */
async function writesIdle(urls: string[]): Promise<void> {
  for (;;) {
    const depths = await Promise.all(
      urls.map(async (base) => {
        const text = await (await fetch(`${base}/metrics`)).text();
        const line = text.split("\n").find((l) => l.startsWith("ledger_write_queue_depth "));
        return line ? Number(line.split(" ").at(-1)) : 0;
      }),
    );
    if (depths.every((d) => d === 0)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The database of the run: a new file; a new database of the PostgreSQL cluster; or (`--libsql`)
 * a Hrana test server process over a new file (scripts/lib/hrana/), logging its round trips.
 */
async function benchDatabase(): Promise<{
  url: string;
  token?: string;
  drop: () => Promise<void>;
}> {
  if (ENGINE === "sqlite") return { url: `file:${dbFile}`, drop: async () => {} };
  if (ENGINE === "libsql") {
    const token = randomBytes(16).toString("hex");
    const server = await spawnHranaServer({ path: dbFile, token, logFile: hranaLog });
    return { url: server.url, token, drop: server.stop };
  }
  const admin = process.env.LEDGER_TEST_PG_URL;
  if (!admin) throw new Error("--postgres needs LEDGER_TEST_PG_URL (scripts/pg-cluster.sh start)");
  const name = `ledger_bench_${randomBytes(6).toString("hex")}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => dropDatabase(admin, name) };
}

/** What the ledger holds after a run (and, on PostgreSQL, the bootstrap project's id). */
interface LedgerFacts {
  /** Rows of the transactions table. */
  rows: number;
  /** Usage records, and those charged with a debit (`deduct: true` with a cost above 0). */
  usageRecords: number;
  chargedRecords: number;
  projectId: string;
}

const FACTS_SQL = {
  rows: "SELECT count(*) AS n FROM transactions",
  usage: "SELECT count(*) AS n FROM usage_records",
  charged: "SELECT count(*) AS n FROM usage_records WHERE transaction_id IS NOT NULL",
};

/** Counts of the ledger's tables after a run. */
async function ledgerFacts(url: string): Promise<LedgerFacts> {
  if (ENGINE !== "postgres") {
    const db = new LibsqlDatabase(dbFile);
    const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
    const facts = {
      rows: count(FACTS_SQL.rows),
      usageRecords: count(FACTS_SQL.usage),
      chargedRecords: count(FACTS_SQL.charged),
      projectId: "",
    };
    db.close();
    return facts;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = async (sql: string) => Number((await client.query(sql)).rows[0]?.n);
    const project = (await client.query("SELECT id FROM projects LIMIT 1")).rows[0]?.id;
    return {
      rows: await count(FACTS_SQL.rows),
      usageRecords: await count(FACTS_SQL.usage),
      chargedRecords: await count(FACTS_SQL.charged),
      projectId: String(project),
    };
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const ceiling = await start([here("./bench-ceiling.js")], { ...process.env, PORT: "0" });
  const database = await benchDatabase();
  const env = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    ...(database.token ? { DATABASE_AUTH_TOKEN: database.token } : {}),
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: "warn",
  };
  const track = (service: { proc: { pid?: number | undefined } }) => {
    if (service.proc.pid !== undefined) servicePids.push(service.proc.pid);
  };
  const first = await start([cli, "serve"], env);
  track(first);
  const services = [first];
  const baseOf = (s: { port: number }) => `http://127.0.0.1:${s.port}`;
  const rows: Row[] = [];
  const counter = { confirmed: 0 };
  const writes = {
    add: 0,
    deduct: 0,
    confirm: 0,
    usage: 0,
    batch: 0,
    reverse: 0,
    failedTransactions: 0,
  };
  const batches = { incomplete: 0 };
  try {
    process.stdout.write(`funding ${ACCOUNTS} accounts (${ENGINE})...\n`);
    await fund(baseOf(services[0] as { port: number }), apiKey);
    await setCreditPrice(baseOf(services[0] as { port: number }), apiKey);
    if (wanted("limits")) {
      process.stdout.write("seeding limited accounts (100,000 earlier debits)...\n");
      await seedLimited(baseOf(services[0] as { port: number }), apiKey);
    }
    if (wanted("member-deduct")) {
      process.stdout.write("seeding 100 pools of 10 members...\n");
      await seedMembers(baseOf(services[0] as { port: number }), apiKey);
    }
    const ceilingRow = await scenario(
      `ceiling (bare Hono JSON POST)`,
      `http://127.0.0.1:${ceiling.port}`,
      [{ method: "POST", path: "/echo", body: json({ accountId: "a", amount: 1 }) }],
    );
    rows.push(ceilingRow);
    for (const processes of ENGINE === "postgres" ? [1, 2] : [1]) {
      while (services.length < processes) {
        const service = await start([cli, "serve"], env);
        services.push(service);
        track(service);
      }
      const urls = services.map(baseOf);
      const label = (name: string) => (ENGINE === "postgres" ? `${name}, ${processes} proc` : name);
      const deducted = await scenario(label("deduct"), urls, deduct);
      rows.push(deducted);
      const ratio = (row: Row, name: string) =>
        process.stdout.write(
          `  ${name} / deduct: ${(row.reqPerSec / deducted.reqPerSec).toFixed(2)}\n`,
        );
      if (wanted("limits")) {
        // Spend limits (scripts/lib/bench-limits.ts): against the plain deduct of this run.
        const limitedRow = await scenario(label("deduct, 3 limits"), urls, limitedDeduct);
        rows.push(limitedRow);
        ratio(limitedRow, "deduct, 3 limits");
      }
      if (wanted("member-deduct")) {
        // Members of shared pools, a limit at each level (scripts/lib/bench-members.ts).
        const memberRow = await scenario(label("member deduct, 2 levels"), urls, memberDeduct);
        rows.push(memberRow);
        ratio(memberRow, "member deduct, 2 levels");
      }
      if (wanted("usage-deduct")) {
        const charged = await scenario(label("usage+deduct"), urls, usageDeduct);
        rows.push(charged);
        ratio(charged, "usage+deduct");
      }
      if (processes === 1 && wanted("batch")) {
        const batched = await scenario(
          label(`batch of ${BATCH_SIZE} deducts, 4 conn`),
          urls,
          batchDeduct(batches),
          1,
          {
            opsPerRequest: BATCH_SIZE,
            connections: 4,
            timeoutSeconds: 60,
            settle: () => writesIdle(urls),
          },
        );
        rows.push(batched);
        ratio(batched, "batch (deductions/s)");
        // Batches the run stopped waiting for still hold the writer (SQLite) or their accounts'
        // locks (PostgreSQL): the next scenario starts once the service has finished them.
        await writesIdle(urls);
      }
      rows.push(await scenario(label("reserve+confirm (pairs)"), urls, reserveConfirm(counter), 2));
      rows.push(await scenario(label("balance read"), urls, balanceRead));
      if (processes === 1) {
        rows.push(await scenario(label("transactions page"), urls, transactionsPage));
        if (wanted("usage-record"))
          rows.push(await scenario(label("usage record"), urls, usageRecord));
      }
      if (wanted("reversal")) {
        // Deductions of 1 credit booked here (POST /v1/batch, through the first process), each
        // reversed in full once by the run (scripts/lib/bench-reversal.ts); last of the round.
        const seedBase = urls[0] as string;
        const pool = reversalPool();
        process.stdout.write("  seeding deductions to reverse...\n");
        await seedForWarmup(seedBase, apiKey, pool, WARMUP_SECONDS);
        const reversed = await scenario(label("reversal"), urls, reversal(pool), 1, {
          settle: async () => {
            await writesIdle(urls);
            await topUp(seedBase, apiKey, pool, WARMUP_SECONDS, SECONDS);
          },
        });
        rows.push(reversed);
        ratio(reversed, "reversal");
        // The reversals autocannon stopped waiting for are still running: the next round (or the
        // count of the writes answered 200, after the last) starts once they have been answered.
        await writesIdle(urls);
        await new Promise((r) => setTimeout(r, 200));
        if (pool.exhausted > 0)
          process.stdout.write(`  reversals after the deductions ran out: ${pool.exhausted}\n`);
      }
    }
    for (const service of services) {
      const w = await acknowledgedWrites(baseOf(service));
      writes.add += w.add;
      writes.deduct += w.deduct;
      writes.confirm += w.confirm;
      writes.usage += w.usage;
      writes.batch += w.batch;
      writes.reverse += w.reverse;
      writes.failedTransactions += w.failedTransactions;
    }
  } finally {
    for (const service of services) await stop(service.proc);
    await stop(ceiling.proc);
  }
  let pgbenchRows = 0;
  if (ENGINE === "postgres") {
    const { projectId } = await ledgerFacts(database.url);
    for (const clients of [10, CONNECTIONS]) {
      const r = await runPgbench({
        url: database.url,
        projectId,
        accounts: ACCOUNTS,
        clients,
        seconds: SECONDS,
        dir,
      });
      pgbenchRows += r.transactions;
      rows.push({
        scenario: `pgbench deduct SQL, ${clients} conn`,
        reqPerSec: r.tps,
        p50Ms: r.p50Ms,
        p99Ms: r.p99Ms,
        errors: r.failed,
        ok: r.transactions,
      });
      process.stdout.write(`  pgbench ${clients} connections: ${r.tps} tps, p99 ${r.p99Ms} ms\n`);
    }
  }
  for (const row of rows)
    row.ofCeiling = Math.round((row.reqPerSec / (rows[0]?.reqPerSec ?? 1)) * 1000) / 1000;
  console.log(
    `\n${ENGINE}: scenario${" ".repeat(24 - ENGINE.length)} req/s     p50 ms  p99 ms  errors  of ceiling  svc CPU µs/op`,
  );
  for (const r of rows) {
    console.log(
      `${r.scenario.padEnd(32)} ${String(r.reqPerSec).padStart(7)} ${String(r.p50Ms).padStart(9)} ${String(r.p99Ms).padStart(7)} ${String(r.errors).padStart(7)} ${String(r.ofCeiling).padStart(11)}${String(r.serviceCpuUsPerOp ?? "").padStart(15)}${r.roundTrips === undefined ? "" : `  ${r.roundTrips} round trips`}`,
    );
  }
  const verify = spawnSync(process.execPath, [cli, "verify"], { env, encoding: "utf8" });
  process.stdout.write(`\nledger verify: ${verify.stdout.trim()}\n`);
  // Successful writes as the service counted its 200 answers (ledger_http_requests_total): the
  // client's own count misses requests still in flight when autocannon stops, which the
  // service did commit and answer. pgbench's committed transactions add their own rows, and
  // each usage record charged with deduct: true its debit (the bench's other usage records
  // name no transaction); every usage record answered 200 must be stored. Every batch commits
  // all its deductions (the accounts hold far more than the run spends); one that did not is
  // counted in `batches.incomplete` and fails the run (the reversal scenario's seeding batches
  // throw instead). Each reversal answered 200 is one row (a credit; no grant it gives back to
  // has expired).
  const facts = await ledgerFacts(database.url);
  const batchRows = writes.batch * BATCH_SIZE;
  const expectedRows =
    writes.add +
    writes.deduct +
    writes.confirm +
    facts.chargedRecords +
    batchRows +
    writes.reverse +
    pgbenchRows;
  const n = facts.rows;
  const rowsMatch = n === expectedRows && facts.usageRecords === writes.usage;
  process.stdout.write(
    `write transactions that did not commit (retried conflicts and 503s): ${writes.failedTransactions}\n`,
  );
  process.stdout.write(
    `ledger rows ${n}, successful writes ${expectedRows} (${writes.add} adds + ${writes.deduct} deducts + ${writes.confirm} confirms answered 200 + ${facts.chargedRecords} charged usage records + ${batchRows} batch deductions${writes.reverse ? ` + ${writes.reverse} reversals` : ""}${pgbenchRows ? ` + ${pgbenchRows} pgbench deductions` : ""}); usage records ${facts.usageRecords}, answered 200 ${writes.usage}: ${rowsMatch ? "equal" : "MISMATCH"}\n`,
  );
  const outDir = here("../../bench-results");
  mkdirSync(outDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const prefix = { sqlite: "", postgres: "pg-", libsql: "libsql-" }[ENGINE];
  const file = join(outDir, `bench-${prefix}${stamp}.json`);
  writeFileSync(
    file,
    json({
      engine: ENGINE,
      seconds: SECONDS,
      connections: CONNECTIONS,
      rows,
      ledgerRows: n,
      expectedRows,
      verify: verify.stdout.trim(),
    }),
  );
  process.stdout.write(`results: ${file}\n`);
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
  if (batches.incomplete > 0) {
    process.stdout.write(`batches that did not commit every deduction: ${batches.incomplete}\n`);
  }
  if (verify.status !== 0 || !rowsMatch || batches.incomplete > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
