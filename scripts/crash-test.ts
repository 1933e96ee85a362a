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
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import LibsqlDatabase from "libsql";
import { freePort, waitForHealth } from "./lib/net.ts";

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 5);
const ACCOUNTS = 20;
const WORKERS = 32;
const FUNDING = 1_000_000;
const DEDUCT = 1;
const HOLD = 5;
const ACTUAL = 3;
const cli = fileURLToPath(new URL("../src/cli/index.js", import.meta.url));

interface Sent {
  key: string;
  path: string;
  body: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: the acknowledged JSON response.
  ack?: any;
}

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
    const server = spawn(process.execPath, [cli, "serve"], { env: this.env, stdio: "ignore" });
    this.server = server;
    this.exited = new Promise((resolve) => server.once("exit", resolve));
    await waitForHealth(`http://127.0.0.1:${this.port}`);
  }

  // biome-ignore lint/suspicious/noExplicitAny: JSON responses are read field by field.
  async post(path: string, body: unknown, key?: string): Promise<{ status: number; json: any }> {
    const headers: Record<string, string> = {
      "X-API-Key": this.apiKey,
      "Content-Type": "application/json",
    };
    if (key) headers["Idempotency-Key"] = key;
    const res = await fetch(`http://127.0.0.1:${this.port}${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  /** Sends a keyed write and records it; the ack is kept only for a 200. */
  async write(path: string, body: Record<string, unknown>): Promise<Sent | undefined> {
    const entry: Sent = { key: randomUUID(), path, body };
    this.sent.push(entry);
    const { status, json } = await this.post(path, body, entry.key);
    if (status !== 200) throw new Error(`${path} answered ${status}: ${JSON.stringify(json)}`);
    entry.ack = json;
    return entry;
  }

  async worker(): Promise<void> {
    while (!this.stopped) {
      const accountId = `acct-${Math.floor(Math.random() * ACCOUNTS)}`;
      try {
        if (Math.random() < 0.5) {
          await this.write("/v1/accounts/credits/deduct", { accountId, amount: DEDUCT });
        } else {
          const hold = await this.write("/v1/reservations/create", { accountId, amount: HOLD });
          await this.write("/v1/reservations/confirm", {
            reservationId: hold?.ack.reservation.id,
            actualAmount: ACTUAL,
          });
        }
      } catch (err) {
        if (this.stopped) return;
        throw err;
      }
    }
  }
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

async function runRound(round: number): Promise<string> {
  const r = new Round();
  try {
    await r.start();
    for (let i = 0; i < ACCOUNTS; i++) {
      await r.post("/v1/accounts/create", { externalId: `acct-${i}` });
      await r.post("/v1/accounts/credits/add", { accountId: `acct-${i}`, amount: FUNDING });
    }
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
    const res = db.prepare("SELECT status, transaction_id FROM reservations WHERE id = ?");
    for (const s of r.sent.filter((x) => x.ack)) {
      if (s.path.endsWith("/deduct")) {
        check(txn.get(s.ack.transactionId) !== undefined, `acknowledged deduct lost: ${s.key}`);
      } else if (s.path.endsWith("/create")) {
        check(res.get(s.ack.reservation.id) !== undefined, `acknowledged hold lost: ${s.key}`);
      } else {
        const row = res.get(s.ack.reservationId) as { status: string } | undefined;
        check(row?.status === "confirmed", `acknowledged confirm lost: ${s.key}`);
        check(txn.get(s.ack.transactionId) !== undefined, `confirm debit lost: ${s.key}`);
      }
    }
    db.close();

    // Replay what was sent but not acknowledged, in order (a confirm only follows its create).
    const unacked = r.sent.filter((s) => !s.ack);
    for (const s of unacked) {
      const { status, json } = await r.post(s.path, s.body, s.key);
      check(status === 200, `replay of ${s.path} answered ${status}: ${JSON.stringify(json)}`);
    }
    r.server?.kill("SIGTERM");
    await r.exited;

    const count = (path: string) => r.sent.filter((s) => s.path.endsWith(path)).length;
    const after = new LibsqlDatabase(join(r.dir, "crash.db"));
    const n = (q: string) => (after.prepare(q).get() as { n: number }).n;
    const deducts = n("SELECT count(*) AS n FROM transactions WHERE source = 'deduct'");
    const holds = n("SELECT count(*) AS n FROM reservations");
    const confirms = n("SELECT count(*) AS n FROM transactions WHERE source = 'reservation'");
    check(deducts === count("/deduct"), `deductions ${deducts} != keys sent ${count("/deduct")}`);
    check(holds === count("/reservations/create"), `holds ${holds} != keys sent`);
    check(confirms === count("/confirm"), `confirmations ${confirms} != keys sent`);
    const total = n("SELECT sum(balance_micros) AS n FROM accounts");
    const expected = (ACCOUNTS * FUNDING - deducts * DEDUCT - confirms * ACTUAL) * 1_000_000;
    check(total === expected, `balances sum ${total} != expected ${expected}`);
    after.close();
    const verify = spawnSync(process.execPath, [cli, "verify"], { env: r.env, encoding: "utf8" });
    check(verify.status === 0, `ledger verify failed: ${verify.stdout}`);
    return `round ${round}: ${r.sent.length} writes sent, ${acked} acknowledged before kill -9, ${unacked.length} replayed; ${deducts} deductions, ${confirms} confirmations, ${holds} holds; verify OK`;
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
