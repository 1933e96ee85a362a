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
 *
 * `npm run crash-test -- --libsql` (or `--libsql=ws`) runs the same against remote libSQL: each
 * round starts the Hrana test server (scripts/lib/hrana/) over a fresh file, the service reaches
 * it over HTTP (or WebSocket) with a token, and only the service is killed; the server keeps
 * running, as sqld would. A replay answered 503 (the killed process's open transaction still
 * holds the server's write lock until its stream expires) is sent again, with its key, until it
 * is answered (at most 60 s); the report counts those 503s.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import LibsqlDatabase from "libsql";
import type { Sent } from "./lib/crash.ts";
import * as crash from "./lib/crash.ts";
import { type HranaProcess, spawnHranaServer } from "./lib/hrana/process.ts";
import { freePort, waitForHealth } from "./lib/net.ts";

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 5);
const WORKERS = 32;
/** Remote libSQL over "http" or "ws"; undefined: the embedded file. */
const REMOTE = ((): "http" | "ws" | undefined => {
  const flag = process.argv.find((a) => a === "--libsql" || a.startsWith("--libsql="));
  if (flag === undefined) return undefined;
  return flag === "--libsql=ws" ? "ws" : "http";
})();
const TOKEN = `crash_${randomBytes(12).toString("hex")}`;

/** Reads the database between the service's runs: the file itself, or through the server. */
interface Reader {
  get(sql: string, arg?: string): Promise<Record<string, unknown> | undefined>;
  close(): void;
}

function fileReader(path: string): Reader {
  const db = new LibsqlDatabase(path);
  return {
    get: async (sql, arg) =>
      db.prepare(sql).get(...(arg === undefined ? [] : [arg])) as Record<string, unknown>,
    close: () => db.close(),
  };
}

function remoteReader(url: string): Reader {
  const client = createClient({ url, authToken: TOKEN });
  return {
    get: async (sql, arg) => {
      const rs = await client.execute({ sql, args: arg === undefined ? [] : [arg] });
      return rs.rows[0] as Record<string, unknown> | undefined;
    },
    close: () => client.close(),
  };
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
  remote: HranaProcess | undefined;

  get env() {
    return {
      ...process.env,
      PORT: String(this.port),
      HOST: "127.0.0.1",
      ...(this.remote
        ? {
            DATABASE_URL: this.remote.url.replace(/^http/, REMOTE ?? "http"),
            DATABASE_AUTH_TOKEN: TOKEN,
          }
        : { DATABASE_URL: `file:${join(this.dir, "crash.db")}` }),
      LEDGER_BOOTSTRAP_API_KEY: this.apiKey,
      LOG_LEVEL: "warn",
    };
  }

  reader(): Reader {
    return this.remote ? remoteReader(this.remote.url) : fileReader(join(this.dir, "crash.db"));
  }

  async start(): Promise<void> {
    if (REMOTE && !this.remote) {
      this.remote = await spawnHranaServer({ path: join(this.dir, "crash.db"), token: TOKEN });
    }
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
    // Remote writes are slower (a round trip per statement): a longer run before the kill.
    const runMs = REMOTE ? 2000 + Math.random() * 3000 : 300 + Math.random() * 1200;
    await new Promise((res) => setTimeout(res, runMs));
    r.stopped = true;
    r.server?.kill("SIGKILL");
    await Promise.allSettled(workers);
    await r.exited;
    const acked = r.sent.filter((s) => s.ack).length;

    await r.start();
    const db = r.reader();
    await crash.checkAcknowledged(r.sent, {
      transactionExists: async (id) =>
        (await db.get("SELECT id FROM transactions WHERE id = ?", id)) !== undefined,
      reservationStatus: async (id) =>
        (await db.get("SELECT status FROM reservations WHERE id = ?", id))?.status as
          | string
          | undefined,
    });
    db.close();

    let unavailable = 0;
    const replayed = await crash.replayUnacknowledged(r.sent, async (path, body, key) => {
      const started = Date.now();
      for (;;) {
        const answer = await r.post(path, body, key);
        // 503 is safe to repeat with the key; only remote libSQL is expected to answer it here.
        if (answer.status !== 503 || !REMOTE || Date.now() - started > 60_000) return answer;
        unavailable++;
        await new Promise((res) => setTimeout(res, 200));
      }
    });
    r.server?.kill("SIGTERM");
    await r.exited;

    const after = r.reader();
    const n = async (q: string) => Number((await after.get(q))?.n);
    const deducts = await n("SELECT count(*) AS n FROM transactions WHERE source = 'deduct'");
    const holds = await n("SELECT count(*) AS n FROM reservations");
    const confirms = await n("SELECT count(*) AS n FROM transactions WHERE source = 'reservation'");
    const balanceMicros = await n("SELECT sum(balance_micros) AS n FROM accounts");
    after.close();
    crash.checkTotals(r.sent, { deducts, holds, confirms, balanceMicros });
    crash.checkVerify(r.env);
    const waits = REMOTE ? ` (${unavailable} replay answers were 503 and sent again)` : "";
    return `round ${round}: ${r.sent.length} writes sent, ${acked} acknowledged before kill -9, ${replayed} replayed${waits}; ${deducts} deductions, ${confirms} confirmations, ${holds} holds; verify OK`;
  } finally {
    if (r.server && r.server.exitCode === null) r.server.kill("SIGKILL");
    await r.remote?.stop();
    rmSync(r.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const on = REMOTE ? ` on remote libSQL over ${REMOTE} (the Hrana test server)` : "";
  for (let i = 1; i <= ROUNDS; i++) console.log(await runRound(i));
  console.log(`crash test${on}: ${ROUNDS} rounds passed`);
}

main().catch((err) => {
  console.error(`crash test FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
