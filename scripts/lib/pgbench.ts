/**
 * PostgreSQL's own ceiling for the bench (docs/benchmarks.md): `pgbench` running what the service
 * sends to the database for one deduction, straight against it: no HTTP, no API key, no JSON.
 * The script is generated from the service's own statement (`pgPlainDebit` of
 * src/ledger/plain-debit.ts, compiled as the service compiles it), alone, as the write path runs
 * a deduction without an Idempotency-Key (`WriteQueue.runWrite`: no BEGIN or COMMIT around
 * it); each of the statement's parameters is given the value the service would
 * give it for a bench deduction (an argument this file does not know fails the run, so the
 * comparison cannot drift from the service's SQL). Each bench account holds one grant of its
 * whole funding, so the deduction is always plain.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pgPlainDebit } from "../../src/ledger/plain-debit.ts";

/** Micro-credits each pgbench deduction takes (0.5 credits, as the service bench deducts). */
const AMOUNT_MICROS = 500_000;

/** What the service passes for each argument of a bench deduction, as pgbench SQL. */
const DEDUCTION_VALUES: Record<string, string> = {
  projectId: ":pid",
  ref: "'bench-' || :n",
  byId: "false",
  amountMicros: String(AMOUNT_MICROS),
  nowMs: "(extract(epoch from clock_timestamp()) * 1000)::bigint",
  txnId: "'txn_pgbench_' || replace(gen_random_uuid()::text, '-', '')",
  description: "''",
  metadata: "'{}'",
  source: "'deduct'",
  holdId: "NULL",
  holdMicros: "NULL",
};

/**
 * The pgbench script of one deduction: the service's statement with its parameters replaced.
 * @throws Error when the statement takes an argument this file gives no value
 */
export function deductionScript(accounts: number): string {
  const { sql, parameters } = pgPlainDebit.describe("postgres");
  const text = sql.replace(/\$(\d+)/g, (_, index: string) => {
    const name = parameters[Number(index) - 1];
    const value = name === null || name === undefined ? undefined : DEDUCTION_VALUES[name];
    if (value === undefined) throw new Error(`pgbench: no value for parameter $${index} (${name})`);
    return value;
  });
  return `\\set n random(0, ${accounts - 1})\n${text};\n`;
}

/** The pgbench found next to the cluster's server (LEDGER_PG_BIN), else on PATH. */
function pgbenchPath(): string {
  const bin = process.env.LEDGER_PG_BIN;
  return bin && existsSync(join(bin, "pgbench")) ? join(bin, "pgbench") : "pgbench";
}

export interface PgbenchResult {
  clients: number;
  tps: number;
  p50Ms: number;
  p99Ms: number;
  transactions: number;
  failed: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const index = Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length));
  return sorted[index] ?? 0;
}

/**
 * Runs the deduction script for `seconds` with `clients` connections (prepared statements), in
 * `dir` (its per-transaction log goes there), against `url`.
 * @throws Error when pgbench fails or prints no result
 */
export async function runPgbench(options: {
  url: string;
  projectId: string;
  accounts: number;
  clients: number;
  seconds: number;
  dir: string;
}): Promise<PgbenchResult> {
  const script = join(options.dir, "deduct.sql");
  writeFileSync(script, deductionScript(options.accounts));
  const prefix = `pgbench-${options.clients}`;
  const args = [
    "-n",
    "-M",
    "prepared",
    "-c",
    String(options.clients),
    "-j",
    "2",
    "-T",
    String(options.seconds),
    "-D",
    `pid=${options.projectId}`,
    "-f",
    script,
    "-l",
    `--log-prefix=${prefix}`,
    options.url,
  ];
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(pgbenchPath(), args, { cwd: options.dir });
    let text = "";
    child.stdout.on("data", (d: Buffer) => {
      text += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      text += d.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(text) : reject(new Error(`pgbench exited ${code}:\n${text}`)),
    );
  });
  const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1]);
  const transactions = Number(/actually processed: (\d+)/.exec(output)?.[1]);
  const failed = Number(/number of failed transactions: (\d+)/.exec(output)?.[1] ?? 0);
  if (!Number.isFinite(tps) || !Number.isFinite(transactions)) {
    throw new Error(`pgbench printed no result:\n${output}`);
  }
  // Per-transaction log lines: client, transaction, latency in µs, script, epoch s, epoch µs.
  const latencies: number[] = [];
  for (const file of readdirSync(options.dir).filter((f) => f.startsWith(prefix))) {
    for (const line of readFileSync(join(options.dir, file), "utf8").split("\n")) {
      const micros = Number(line.split(" ")[2]);
      if (Number.isFinite(micros) && line.length > 0) latencies.push(micros / 1000);
    }
  }
  latencies.sort((a, b) => a - b);
  return {
    clients: options.clients,
    tps: Math.round(tps),
    p50Ms: Math.round(percentile(latencies, 50) * 100) / 100,
    p99Ms: Math.round(percentile(latencies, 99) * 100) / 100,
    transactions,
    failed,
  };
}
