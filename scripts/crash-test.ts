/**
 * `npm run crash-test` (docs/design.md#crash-safety): acknowledged writes survive `kill -9`, and
 * nothing is applied twice or half.
 *
 * Each of ROUNDS rounds: start the service on a fresh database file; fund ACCOUNTS accounts; run
 * WORKERS concurrent clients sending deductions and reservation create/confirm pairs, each
 * request with its own Idempotency-Key, recording every request sent and every 200 received;
 * `kill -9` the server at a random moment; restart it on the same file; then check that
 *  1. every acknowledged deduction, reservation and confirmation is in the database;
 *  2. replaying every request that was sent but not acknowledged, with its key, succeeds, and
 *     afterwards each key has exactly one effect (rows = keys sent: nothing lost, nothing twice);
 *  3. each balance is exactly funding − deductions − confirmed amounts;
 *  4. `ledger verify` passes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import LibsqlDatabase from "libsql";
import type { Sent } from "./lib/crash.ts";
import * as crash from "./lib/crash.ts";
import { freePort, waitForHealth } from "./lib/net.ts";

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 5);
const WORKERS = 32;

class Round {
  readonly dir = mkdtempSync(join(tmpdir(), "ledger-crash-"));
  readonly apiKey = `ldg_crash_${randomBytes(16).toString("hex")}`;
  readonly sent: Sent[] = [];
  port = 0;
  server: ChildProcess | undefined;
  /** Resolves when the current server process has exited (set at spawn, so no exit is missed). */
  exited: Promise<unknown> = Promise.resolve();
  stopped = false;

  get env() {
    return {
      ...process.env,
      PORT: String(this.port),
      HOST: "127.0.0.1",
      DATABASE_URL: `file:${join(this.dir, "crash.db")}`,
      LEDGER_BOOTSTRAP_API_KEY: this.apiKey,
      LOG_LEVEL: "warn",
    };
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    const server = spawn(process.execPath, [crash.cli, "serve"], {
      env: this.env,
      stdio: "ignore",
    });
    this.server = server;
    this.exited = new Promise((resolve) => server.once("exit", resolve));
    await waitForHealth(`http://127.0.0.1:${this.port}`);
  }

  post = (path: string, body: unknown, key?: string) =>
    crash.postJson(`http://127.0.0.1:${this.port}`, this.apiKey, path, body, key);

  /** Sends a keyed write and records it; the ack is kept only for a 200. */
  write = async (path: string, body: Record<string, unknown>): Promise<Sent> => {
    const entry: Sent = { key: randomUUID(), path, body };
    this.sent.push(entry);
    const { status, json } = await this.post(path, body, entry.key);
    if (status !== 200) throw new Error(`${path} answered ${status}: ${JSON.stringify(json)}`);
    entry.ack = crash.ackOf(path, json);
    return entry;
  };

  async worker(): Promise<void> {
    while (!this.stopped) {
      try {
        await crash.sendOneWrite(this.write);
      } catch (err) {
        if (this.stopped) return;
        throw err;
      }
    }
  }
}

async function runRound(round: number): Promise<string> {
  const r = new Round();
  try {
    await r.start();
    await crash.fundAccounts(r.post);
    const workers = Array.from({ length: WORKERS }, () => r.worker());
    await new Promise((res) => setTimeout(res, 300 + Math.random() * 1200));
    r.stopped = true;
    r.server?.kill("SIGKILL");
    await Promise.allSettled(workers);
    await r.exited;
    const acked = r.sent.filter((s) => s.ack).length;

    await r.start();
    const db = new LibsqlDatabase(join(r.dir, "crash.db"));
    const txn = db.prepare("SELECT id FROM transactions WHERE id = ?");
    const res = db.prepare("SELECT status FROM reservations WHERE id = ?");
    await crash.checkAcknowledged(r.sent, {
      transactionExists: async (id) => txn.get(id) !== undefined,
      reservationStatus: async (id) => (res.get(id) as { status: string } | undefined)?.status,
    });
    db.close();

    const replayed = await crash.replayUnacknowledged(r.sent, r.post);
    r.server?.kill("SIGTERM");
    await r.exited;

    const after = new LibsqlDatabase(join(r.dir, "crash.db"));
    const n = (q: string) => (after.prepare(q).get() as { n: number }).n;
    const deducts = n("SELECT count(*) AS n FROM transactions WHERE source = 'deduct'");
    const holds = n("SELECT count(*) AS n FROM reservations");
    const confirms = n("SELECT count(*) AS n FROM transactions WHERE source = 'reservation'");
    const balanceMicros = n("SELECT sum(balance_micros) AS n FROM accounts");
    after.close();
    crash.checkTotals(r.sent, { deducts, holds, confirms, balanceMicros });
    crash.checkVerify(r.env);
    return `round ${round}: ${r.sent.length} writes sent, ${acked} acknowledged before kill -9, ${replayed} replayed; ${deducts} deductions, ${confirms} confirmations, ${holds} holds; verify OK`;
  } finally {
    if (r.server && r.server.exitCode === null) r.server.kill("SIGKILL");
    rmSync(r.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  for (let i = 1; i <= ROUNDS; i++) console.log(await runRound(i));
  console.log(`crash test: ${ROUNDS} rounds passed`);
}

main().catch((err) => {
  console.error(`crash test FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
