/**
 * `npm run bench:export`: exports 1,000,000 transactions over HTTP and prints the time and the
 * server process's memory growth (docs/design.md#exports; contract: at most 64 MiB, and
 * under 60 s on the reference machine).
 *
 * Loads the ledger first, in this process, on a fresh database: four accounts created and
 * funded through the app (one credit each), then the rest of the rows as debits of those
 * accounts in big multi-row inserts through the write queue (scripts/lib/bulk-ledger.ts), and
 * `ledger verify`'s checks on the result. Then, for each format (CSV, then NDJSON), starts the
 * built service (`ledger serve`) in a process of its own, asks for the whole project's export,
 * reads it to the end counting its rows, and samples the server's VmRSS from /proc every 20 ms;
 * the growth is the larger of the highest sample and the final VmHWM, less VmRSS just before
 * the export.
 *
 * `npm run bench:export -- --postgres` (or BENCH_ENGINE=postgres) runs on a fresh database of
 * the PostgreSQL cluster at LEDGER_TEST_PG_URL (`eval "$(scripts/pg-cluster.sh start)"`).
 * BENCH_EXPORT_ROWS changes the number of rows (default 1,000,000).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { openLedger } from "../src/runtime.ts";
import { startProcess, stopProcess } from "./lib/bench-kit.ts";
import { appendDebits } from "./lib/bulk-ledger.ts";
import { dropDatabase } from "./lib/pg-admin.ts";

const ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 1_000_000);
const ACCOUNTS = 4;
const MIB = 1024 * 1024;
const ENGINE: "sqlite" | "postgres" =
  process.argv.includes("--postgres") || process.env.BENCH_ENGINE === "postgres"
    ? "postgres"
    : "sqlite";
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const cli = here("../src/cli/index.js");
const dir = mkdtempSync(join(tmpdir(), "ledger-bench-export-"));

/** A fresh database: a file, or a new database of the PostgreSQL cluster. */
async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (ENGINE === "sqlite") return { url: `file:${join(dir, "export.db")}`, drop: async () => {} };
  const admin = process.env.LEDGER_TEST_PG_URL;
  if (!admin) throw new Error("--postgres needs LEDGER_TEST_PG_URL (scripts/pg-cluster.sh start)");
  const name = `ledger_bench_export_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`).finally(() => client.end());
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => dropDatabase(admin, name) };
}

/** Loads `ROWS` transactions of `ACCOUNTS` accounts. @returns the project's API key */
async function load(url: string): Promise<string> {
  const ledger = await openLedger(loadConfig({ DATABASE_URL: url, LOG_LEVEL: "warn" }));
  try {
    const { projectId, apiKey } = await createProjectKey(ledger.queue, "bench-export");
    const app = createApp(ledger.deps);
    const post = async (path: string, body: unknown) => {
      const res = await app.request(path, {
        method: "POST",
        headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { account?: { id: string } };
    };
    const started = performance.now();
    const start = Date.parse("2026-10-01T00:00:00Z");
    const debits = Math.ceil((ROWS - ACCOUNTS) / ACCOUNTS);
    let left = ROWS - ACCOUNTS;
    for (let a = 0; a < ACCOUNTS; a++) {
      const created = await post("/v1/accounts/create", { externalId: `export-${a}` });
      const accountId = created.account?.id ?? "";
      await post("/v1/accounts/credits/add", { accountId, amount: 1_000_000 });
      const count = Math.min(debits, left);
      left -= count;
      // 10,000 at a time, each its own write unit: the writer is never held for long.
      for (let from = 0; from < count; from += 10_000) {
        await ledger.queue.run((trx) =>
          appendDebits(trx, {
            projectId,
            accountId,
            count: Math.min(10_000, count - from),
            amountMicros: 10_000 + a,
            createdAtMs: (i) => start + (from + i) * 2 + a,
            description: (i) => `API call ${from + i}, model gpt-4o`,
          }),
        );
      }
    }
    const loadedS = (performance.now() - started) / 1000;
    process.stdout.write(`${ENGINE}: loaded ${ROWS} transactions in ${loadedS.toFixed(1)} s\n`);
    const verifyStarted = performance.now();
    const { problems } = await verifyLedger(ledger.db.read, Date.now());
    const verifyS = (performance.now() - verifyStarted) / 1000;
    process.stdout.write(
      `ledger verify: ${problems.length === 0 ? "ok" : problems.slice(0, 5).join("; ")} (${verifyS.toFixed(1)} s)\n`,
    );
    if (problems.length > 0) throw new Error("the loaded ledger does not verify");
    return apiKey;
  } finally {
    await ledger.close();
  }
}

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM). */
function procBytes(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
  return Number(kb) * 1024;
}

/** Exports the whole project in `format` from a fresh server process; prints the figures. */
async function exportOnce(url: string, apiKey: string, format: "csv" | "ndjson") {
  const env = { ...process.env, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: url };
  const server = await startProcess([cli, "serve"], { ...env, LOG_LEVEL: "warn" });
  const pid = server.proc.pid ?? 0;
  const base = `http://127.0.0.1:${server.port}`;
  const headers = { "X-API-Key": apiKey };
  try {
    // A warm-up: the route, its validation and a page of each query, on a small export.
    await (await fetch(`${base}/v1/transactions/export?endDate=2026-10-01`, { headers })).text();
    const rssBefore = procBytes(pid, "VmRSS");
    let peak = rssBefore;
    const sampler = setInterval(() => {
      peak = Math.max(peak, procBytes(pid, "VmRSS"));
    }, 20);
    const started = performance.now();
    const res = await fetch(`${base}/v1/transactions/export?format=${format}`, { headers });
    if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}`);
    let firstByteMs = 0;
    let bytes = 0;
    let lines = 0;
    for await (const chunk of res.body) {
      if (bytes === 0) firstByteMs = performance.now() - started;
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
    }
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, procBytes(pid, "VmRSS"), procBytes(pid, "VmHWM"));
    const rows = format === "csv" ? lines - 1 : lines;
    const growthMiB = (peak - rssBefore) / MIB;
    process.stdout.write(
      `${ENGINE} ${format}: ${rows} rows, ${(bytes / MIB).toFixed(0)} MiB in ${seconds.toFixed(1)} s ` +
        `(${Math.round(rows / seconds)} rows/s, first byte after ${firstByteMs.toFixed(0)} ms); ` +
        `server RSS ${(rssBefore / MIB).toFixed(0)} MiB before, peak ${(peak / MIB).toFixed(0)} MiB: ` +
        `growth ${growthMiB.toFixed(1)} MiB\n`,
    );
    if (rows !== ROWS) throw new Error(`exported ${rows} rows, not ${ROWS}`);
    return { seconds, growthMiB };
  } finally {
    await stopProcess(server.proc);
  }
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  let failed = false;
  try {
    const apiKey = await load(database.url);
    for (const format of ["csv", "ndjson"] as const) {
      const { seconds, growthMiB } = await exportOnce(database.url, apiKey, format);
      if (seconds >= 60 || growthMiB > 64) failed = true;
    }
  } finally {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`targets (< 60 s, ≤ 64 MiB growth): ${failed ? "MISSED" : "met"}\n`);
  if (failed) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
