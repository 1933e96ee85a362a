/**
 * PostgreSQL's own ceiling for the bench (docs/operations.md, "PostgreSQL and several servers"):
 * `pgbench` running the SQL of one deduction, as the service sends it inside its transaction,
 * straight against the database: lock the account by externalId, sum its holds, read its grants
 * in spending order, move the balance with UPDATE … RETURNING, append the ledger entry, draw the
 * first grant down. No HTTP, no API key lookup, no JSON. Each bench account holds one grant of
 * its whole funding, so the first grant always covers a deduction.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Micro-credits each pgbench deduction takes (0.5 credits, as the service bench deducts). */
const AMOUNT_MICROS = 500_000;

const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/** The deduction's statements, as src/ledger/core.ts and the write path issue them. */
function deductionScript(accounts: number): string {
  return `\\set n random(0, ${accounts - 1})
BEGIN;
SELECT id AS aid FROM accounts WHERE project_id = :pid AND external_id = 'bench-' || :n FOR UPDATE \\gset
SELECT coalesce(sum(amount_micros), 0) AS held FROM reservations WHERE account_id = :aid AND status = 'pending' AND expires_at_ms > ${NOW_MS} \\gset
SELECT g.seq AS gseq, coalesce((SELECT min(d.expires_at_ms) FROM credit_grants d WHERE d.account_id = :aid AND d.exhausted = 0 AND d.expiry_booked = 0 AND d.expires_at_ms IS NOT NULL), 0) AS next_due FROM credit_grants g JOIN credit_grant_remaining r ON r.seq = g.seq WHERE g.account_id = :aid AND g.exhausted = 0 ORDER BY g.expiry_booked DESC, g.priority, coalesce(g.expires_at_ms, 9007199254740991), g.seq LIMIT 1 \\gset
UPDATE accounts SET balance_micros = balance_micros - ${AMOUNT_MICROS}, updated_at_ms = greatest(updated_at_ms, ${NOW_MS}) WHERE id = :aid AND balance_micros >= ${AMOUNT_MICROS} RETURNING balance_micros AS bal, updated_at_ms AS ts \\gset
INSERT INTO transactions (id, project_id, account_id, type, amount_micros, balance_after_micros, description, metadata, source, reservation_id, account_plan_id, created_at_ms) VALUES ('txn_pgbench_' || replace(gen_random_uuid()::text, '-', ''), :pid, :aid, 'debit', ${AMOUNT_MICROS}, :bal, '', '{}', 'deduct', NULL, NULL, :ts);
UPDATE credit_grant_remaining SET remaining_micros = remaining_micros - ${AMOUNT_MICROS} WHERE seq = :gseq AND remaining_micros >= ${AMOUNT_MICROS};
END;
`;
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
