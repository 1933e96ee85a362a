/**
 * `node dist/scripts/cpu-split.js [--postgres] [--scenario deduct] [--seconds 8] [--procs 1]`:
 * where the machine's CPU goes during one bench scenario (docs/benchmarks.md): the CPU seconds
 * of the service processes, of PostgreSQL's processes and of the load generator (this process),
 * read from /proc before and after the run, per answered request. Linux only.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import {
  balanceRead,
  cpuOf,
  deduct,
  fund,
  type Requests,
  reserveConfirm,
  startProcess,
  stopProcess,
  usageRecord,
} from "./lib/bench-kit.ts";
import { dropDatabase } from "./lib/pg-admin.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
const POSTGRES = args.includes("--postgres");
const SECONDS = Number(option("seconds", "8"));
const PROCS = Number(option("procs", "1"));
const scenarios: Record<string, Requests> = {
  deduct,
  reserve: reserveConfirm({ confirmed: 0 }),
  balance: balanceRead,
  usage: usageRecord,
  health: [{ method: "GET", path: "/health" }],
};
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const apiKey = `ldg_cpu_${randomBytes(16).toString("hex")}`;

/** CPU seconds of every process whose command line starts with `postgres`. */
function postgresCpu(): number {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmd.startsWith("postgres")) total += cpuOf(Number(entry));
    } catch {}
  }
  return total;
}

async function main(): Promise<void> {
  const requests = scenarios[option("scenario", "deduct")];
  if (!requests) throw new Error("unknown scenario");
  const dir = mkdtempSync(join(tmpdir(), "ledger-cpu-"));
  let url = `file:${join(dir, "cpu.db")}`;
  const admin = process.env.LEDGER_TEST_PG_URL ?? "";
  const name = `ledger_cpu_${randomBytes(6).toString("hex")}`;
  if (POSTGRES) {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`).finally(() => c.end());
    const u = new URL(admin);
    u.pathname = `/${name}`;
    url = u.toString();
  }
  const env = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: url,
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: "warn",
  };
  const services: Awaited<ReturnType<typeof startProcess>>[] = [];
  for (let i = 0; i < PROCS; i++)
    services.push(await startProcess([here("../src/cli/index.js"), "serve"], env));
  const first = services[0];
  if (!first) throw new Error("no service");
  await fund(`http://127.0.0.1:${first.port}`, apiKey);
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  const drive = (seconds: number) =>
    Promise.all(
      services.map((s) =>
        autocannon({
          url: `http://127.0.0.1:${s.port}`,
          connections: Math.ceil(50 / PROCS),
          duration: seconds,
          headers,
          requests,
        }),
      ),
    );
  await drive(2);
  const pids = services.map((s) => s.proc.pid ?? 0);
  const before = {
    service: pids.reduce((n, p) => n + cpuOf(p), 0),
    pg: POSTGRES ? postgresCpu() : 0,
    self: process.cpuUsage(),
  };
  const runs = await drive(SECONDS);
  const self = process.cpuUsage(before.self);
  const service = pids.reduce((n, p) => n + cpuOf(p), 0) - before.service;
  const pgCpu = POSTGRES ? postgresCpu() - before.pg : 0;
  const answered = runs.reduce((n, r) => n + r["2xx"], 0);
  const us = (seconds: number) => `${Math.round((seconds * 1e6) / answered)} µs`;
  console.log(
    `${answered} answered in ${SECONDS} s (${Math.round(answered / SECONDS)}/s), ${PROCS} service process(es)`,
  );
  console.log(
    `per request: service ${us(service)}, postgres ${us(pgCpu)}, load generator ${us((self.user + self.system) / 1e6)}`,
  );
  for (const s of services) await stopProcess(s.proc);
  if (POSTGRES) await dropDatabase(admin, name);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
