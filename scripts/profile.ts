/**
 * `npm run profile -- [--postgres]
 * [--scenario deduct|limits|members|reserve|balance|usage|usage-deduct|batch]
 * [--seconds N] [--out FILE.cpuprofile] [--perf]`:
 * where one scenario of the bench spends its time (docs/benchmarks.md#how-the-speed-work-was-led).
 *
 * With `--perf` the service runs under `perf record -e cpu-clock` instead (Linux; Debian's
 * linux-perf): only the time the service's threads run is counted, where `--cpu-prof` also counts
 * the event loop's waits inside native calls (an `fsync`). It prints the shares of the on-CPU
 * samples by binary (Node and V8, JIT-compiled JavaScript, SQLite's native library, the kernel,
 * libc) and the JavaScript functions with the largest inclusive shares.
 *
 * Starts one service process under `node --cpu-prof` on a fresh database (a file, or a new
 * database of the cluster at LEDGER_TEST_PG_URL), funds 1,000 accounts, drives the scenario with
 * autocannon at 50 connections, stops the service (which writes its CPU profile) and prints:
 * requests answered, the service's CPU time per request, its self time by module, and on
 * PostgreSQL the statements `pg_stat_statements` saw (calls per request, mean execution time),
 * that is the round trips a request makes. The `batch` scenario is the bench's (batches of
 * 1,000 deductions over 100 accounts, 4 connections): its figures are per operation. The cluster must load pg_stat_statements
 * (scripts/pg-cluster.sh does); the extension is created in the run's database by the cluster's
 * superuser, over the cluster's socket (LEDGER_PG_DATA names its folder).
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import {
  BATCH_SIZE,
  balanceRead,
  batchDeduct,
  deduct,
  fund,
  type Requests,
  reserveConfirm,
  setCreditPrice,
  startProcess,
  stopProcess,
  usageDeduct,
  usageRecord,
} from "./lib/bench-kit.ts";
import { limitedDeduct, seedLimited } from "./lib/bench-limits.ts";
import { memberDeduct, seedMembers } from "./lib/bench-members.ts";
import { dropDatabase } from "./lib/pg-admin.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
const POSTGRES = args.includes("--postgres");
const PERF = args.includes("--perf");
const SCENARIO = option("scenario", "deduct");
const SECONDS = Number(option("seconds", "10"));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const apiKey = `ldg_profile_${randomBytes(16).toString("hex")}`;

const scenarios: Record<string, Requests> = {
  deduct,
  limits: limitedDeduct,
  members: memberDeduct,
  reserve: reserveConfirm({ confirmed: 0 }),
  balance: balanceRead,
  usage: usageRecord,
  "usage-deduct": usageDeduct,
  batch: batchDeduct({ incomplete: 0 }),
};
/** The batch scenario: 4 connections, each request BATCH_SIZE operations. */
const BATCH = SCENARIO === "batch";
const CONNECTIONS = BATCH ? 4 : 50;
const OPS_PER_REQUEST = BATCH ? BATCH_SIZE : 1;

/**
 * Starts `ledger serve`, under `--cpu-prof` when `profDir` is given (with `--perf`, with
 * `--perf-basic-prof` instead, so that `perf` can name JIT-compiled functions).
 */
function startService(env: NodeJS.ProcessEnv, profDir?: string) {
  const prof = !profDir
    ? []
    : PERF
      ? ["--perf-basic-prof", "--no-logfile-per-isolate", `--logfile=${join(profDir, "v8.log")}`]
      : ["--cpu-prof", `--cpu-prof-dir=${profDir}`];
  return startProcess([here("../src/cli/index.js"), "serve"], env, prof);
}

/** Self time by module of a V8 CPU profile, and the total sampled time (ms). */
function summarize(file: string) {
  const profile: {
    nodes: { id: number; callFrame: { functionName: string; url: string } }[];
    samples: number[];
    timeDeltas: number[];
  } = JSON.parse(readFileSync(file, "utf8"));
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byModule = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    totalUs += us;
    const url = frame?.url ?? "";
    const name = frame?.functionName ?? "";
    const module = name.startsWith("(")
      ? name
      : url.includes("node_modules/")
        ? (url
            .split("node_modules/")
            .pop()
            ?.split("/")
            .slice(0, url.includes("node_modules/@") ? 2 : 1)
            .join("/") ?? url)
        : url.includes("/src/")
          ? `src/${url.split("/src/").pop()}`
          : url || "(native)";
    byModule.set(module, (byModule.get(module) ?? 0) + us);
  });
  return { totalMs: totalUs / 1000, byModule };
}

/**
 * Records the on-CPU samples of process `pid` for `seconds` (`perf record -e cpu-clock -g`, 2,000
 * a second) into `file`. @throws when `perf` is missing or may not record (perf_event_paranoid)
 */
function recordPerf(pid: number, file: string, seconds: number): Promise<void> {
  const perf = spawn(
    "perf",
    ["record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-p", String(pid), "-o", file],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  return new Promise((resolve, reject) => {
    perf.once("error", (err) =>
      reject(new Error(`--perf needs perf (Debian: linux-perf): ${err}`)),
    );
    perf.once("exit", () => resolve());
    setTimeout(() => perf.kill("SIGINT"), seconds * 1000);
  });
}

/** `perf report` of `file` as `[share %, name]` rows (`--stdio`, call graphs left out). */
function perfRows(file: string, extra: string[]): [number, string][] {
  const text = execFileSync(
    "perf",
    ["report", "-i", file, "--stdio", "-g", "none", "--percent-limit", "0.3", ...extra],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], maxBuffer: 64 * 1024 * 1024 },
  );
  const rows: [number, string][] = [];
  for (const line of text.split("\n")) {
    const m = /^\s+([\d.]+)%\s+(?:[\d.]+%\s+)?(.*)$/.exec(line);
    if (m?.[1] && m[2]) rows.push([Number(m[1]), m[2].trim()]);
  }
  return rows;
}

/** Prints the on-CPU shares by binary and the JavaScript functions with most inclusive time. */
function printPerf(file: string): void {
  const label = (dso: string) =>
    dso === "node"
      ? "Node and V8 (builtins, promises, GC, llhttp)"
      : dso.startsWith("[JIT]")
        ? "JIT-compiled JavaScript"
        : dso === "index.node"
          ? "SQLite (libsql's native library)"
          : dso === "[kernel.kallsyms]"
            ? "kernel"
            : dso;
  console.log("on-CPU samples of the service by binary (perf, cpu-clock):");
  for (const [share, dso] of perfRows(file, ["--no-children", "--sort", "dso"]).slice(0, 8)) {
    console.log(`  ${share.toFixed(1).padStart(5)}%  ${label(dso)}`);
  }
  console.log("JavaScript functions by inclusive share of the samples:");
  const js = perfRows(file, ["--children", "--sort", "sym"]).filter(([, sym]) =>
    sym.includes("JS:"),
  );
  for (const [share, sym] of js.slice(0, 20)) {
    console.log(`  ${share.toFixed(1).padStart(5)}%  ${sym.replace(/^\[\.\]\s*JS:\S?/, "")}`);
  }
}

async function statements(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT calls, round(mean_exec_time::numeric, 3) AS mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       ORDER BY calls DESC LIMIT 25`,
    );
    return rows as { calls: string; mean_ms: string; query: string }[];
  } finally {
    await client.end();
  }
}

async function pgQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(text).finally(() => client.end());
}

/** Runs `text` in database `database` as the cluster's superuser, over its socket. */
async function asSuperuser(url: string, database: string, text: string): Promise<void> {
  const data = process.env.LEDGER_PG_DATA;
  if (!data) throw new Error("--postgres needs LEDGER_PG_DATA (scripts/pg-cluster.sh env)");
  const client = new pg.Client({
    host: dirname(data),
    port: Number(new URL(url).port),
    user: "postgres",
    database,
  });
  await client.connect();
  await client.query(text).finally(() => client.end());
}

async function main(): Promise<void> {
  const requests = scenarios[SCENARIO];
  if (!requests) throw new Error(`unknown scenario ${SCENARIO}`);
  const dir = mkdtempSync(join(tmpdir(), "ledger-profile-"));
  let url = `file:${join(dir, "profile.db")}`;
  const admin = process.env.LEDGER_TEST_PG_URL;
  const dbName = `ledger_profile_${randomBytes(6).toString("hex")}`;
  if (POSTGRES) {
    if (!admin) throw new Error("--postgres needs LEDGER_TEST_PG_URL (scripts/pg-cluster.sh)");
    await pgQuery(admin, `CREATE DATABASE ${dbName}`);
    const u = new URL(admin);
    u.pathname = `/${dbName}`;
    url = u.toString();
    await asSuperuser(url, dbName, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  }
  const env = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: url,
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: "warn",
  };
  // Funded by a service of its own, so that the profile holds the scenario only.
  const funder = await startService(env);
  await fund(`http://127.0.0.1:${funder.port}`, apiKey);
  await setCreditPrice(`http://127.0.0.1:${funder.port}`, apiKey);
  if (SCENARIO === "limits") await seedLimited(`http://127.0.0.1:${funder.port}`, apiKey);
  if (SCENARIO === "members") await seedMembers(`http://127.0.0.1:${funder.port}`, apiKey);
  await stopProcess(funder.proc);
  const { proc, port } = await startService(env, dir);
  const base = `http://127.0.0.1:${port}`;
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  const timeout = BATCH ? 60 : 10;
  const drive = { url: base, connections: CONNECTIONS, headers, requests, timeout };
  await autocannon({ ...drive, duration: 2 });
  if (POSTGRES) await asSuperuser(url, dbName, "SELECT pg_stat_statements_reset()");
  const perfData = join(dir, "perf.data");
  const recording = PERF ? recordPerf(proc.pid ?? 0, perfData, SECONDS) : undefined;
  const result = await autocannon({ ...drive, duration: SECONDS });
  const answered = result["2xx"] * OPS_PER_REQUEST;
  await recording;
  const stmts = POSTGRES ? await statements(url) : [];
  await stopProcess(proc);
  console.log(
    `${SCENARIO} on ${POSTGRES ? "postgres" : "sqlite"}: ${answered} answered in ${SECONDS} s (${Math.round(answered / SECONDS)}/s, p99 ${result.latency.p99} ms, errors ${result.errors + result.non2xx})`,
  );
  if (PERF) {
    printPerf(perfData);
    rmSync(`/tmp/perf-${proc.pid}.map`, { force: true });
  } else {
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
    if (!file) throw new Error("the service wrote no CPU profile");
    const { totalMs, byModule } = summarize(join(dir, file));
    const busyMs = totalMs - (byModule.get("(idle)") ?? 0) / 1000;
    const keep = option("out", "");
    if (keep) copyFileSync(join(dir, file), keep);
    console.log(
      `service CPU (warm-up and run): ${Math.round(busyMs)} ms busy of ${Math.round(totalMs)} ms sampled, ${((1000 * busyMs) / Math.max(1, answered)).toFixed(0)} µs per answered ${BATCH ? "operation" : "request"} of the run`,
    );
    console.log("self time by module (% of sampled):");
    for (const [module, us] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
      console.log(`  ${((100 * us) / 1000 / totalMs).toFixed(1).padStart(5)}%  ${module}`);
    }
  }
  if (POSTGRES) {
    console.log(
      `statements (pg_stat_statements, per answered ${BATCH ? "operation" : "request"}):`,
    );
    for (const s of stmts) {
      const perRequest = (Number(s.calls) / Math.max(1, answered)).toFixed(2);
      console.log(`  ${perRequest.padStart(6)}  ${s.mean_ms.padStart(7)} ms  ${s.query}`);
    }
    await dropDatabase(admin ?? "", dbName);
  }
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
