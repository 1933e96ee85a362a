/**
 * `npm run crash-test:pg`: several servers on one PostgreSQL database survive crashes of
 * themselves and of the database, and nothing is applied twice or half (docs/operations.md,
 * "PostgreSQL and several servers").
 *
 * Needs a PostgreSQL cluster it may stop and start: `eval "$(scripts/pg-cluster.sh start)"`
 * (LEDGER_TEST_PG_URL; the crash and resume go through `scripts/pg-cluster.sh`).
 *
 * Each round starts SERVERS `ledger serve` processes on a fresh database, funds ACCOUNTS
 * accounts, and runs WORKERS concurrent clients sending deductions and reservation
 * create/confirm pairs to the servers in turn, each request with its own Idempotency-Key,
 * recording every request sent and every 200 received. Mid-load, one of:
 *  - kill-all: `kill -9` of every server, then all are started again;
 *  - kill-one: `kill -9` of one server while the others keep serving; it is started again;
 *  - postgres: PostgreSQL stopped in immediate mode and started again while the servers keep
 *    running: meanwhile every request answers 503 SERVICE_UNAVAILABLE within 5 s and `/ready`
 *    503, and afterwards they serve again within 30 s without a restart.
 * Then: every acknowledged write is in the database; every request sent but not acknowledged
 * is sent again with its key and succeeds; each key has exactly one effect (rows = keys sent);
 * each balance is exactly funding − deductions − confirmed amounts; `ledger verify` passes.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort, waitForHealth } from "./lib/net.ts";

const ROUNDS = (process.env.CRASH_PG_ROUNDS ?? "kill-all,kill-one,postgres").split(",");
const SERVERS = 3;
const ACCOUNTS = 20;
const WORKERS = 24;
const FUNDING = 1_000_000;
const DEDUCT = 1;
const HOLD = 5;
const ACTUAL = 3;
/** How long PostgreSQL stays down in the postgres round, in ms. */
const OUTAGE_MS = 4000;
const cli = fileURLToPath(new URL("../src/cli/index.js", import.meta.url));
const clusterScript = fileURLToPath(new URL("../../scripts/pg-cluster.sh", import.meta.url));

type Kind = "kill-all" | "kill-one" | "postgres";

interface Sent {
  key: string;
  path: string;
  body: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: the acknowledged JSON response.
  ack?: any;
}

interface Reply {
  status: number;
  code?: string;
  startedAt: number;
  ms: number;
}

function adminUrl(): string {
  const url = process.env.LEDGER_TEST_PG_URL;
  if (!url) throw new Error('needs LEDGER_TEST_PG_URL: eval "$(scripts/pg-cluster.sh start)"');
  return url;
}

async function admin<T>(url: string, run: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Runs `pg-cluster.sh crash|resume` without blocking the clients meanwhile. */
function cluster(command: "crash" | "resume"): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [clusterScript, command], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`pg-cluster.sh ${command}: ${stderr}`)),
    );
  });
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

class Server {
  proc: ChildProcess | undefined;
  exited: Promise<unknown> = Promise.resolve();
  constructor(
    readonly port: number,
    readonly env: NodeJS.ProcessEnv,
  ) {}

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const proc = spawn(process.execPath, [cli, "serve"], {
      env: { ...this.env, PORT: String(this.port) },
      stdio: ["ignore", "ignore", "inherit"],
    });
    this.proc = proc;
    this.exited = new Promise((resolve) => proc.once("exit", resolve));
    await waitForHealth(this.base, 20_000);
  }

  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (this.proc && this.proc.exitCode === null) this.proc.kill(signal);
    await this.exited;
  }
}

class Round {
  readonly apiKey = `ldg_crashpg_${randomBytes(16).toString("hex")}`;
  readonly sent: Sent[] = [];
  readonly replies: Reply[] = [];
  servers: Server[] = [];
  stopped = false;
  turn = 0;
  databaseUrl = "";
  dbName = `ledger_crash_${randomBytes(6).toString("hex")}`;

  get env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      HOST: "127.0.0.1",
      DATABASE_URL: this.databaseUrl,
      LEDGER_BOOTSTRAP_API_KEY: this.apiKey,
      LOG_LEVEL: "fatal",
    };
  }

  async setUp(): Promise<void> {
    await admin(adminUrl(), (c) => c.query(`CREATE DATABASE ${this.dbName}`));
    const url = new URL(adminUrl());
    url.pathname = `/${this.dbName}`;
    this.databaseUrl = url.toString();
    for (let i = 0; i < SERVERS; i++) this.servers.push(new Server(await freePort(), this.env));
    await Promise.all(this.servers.map((s) => s.start()));
  }

  async tearDown(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.kill()));
    await admin(adminUrl(), (c) => c.query(`DROP DATABASE IF EXISTS ${this.dbName} WITH (FORCE)`));
  }

  // biome-ignore lint/suspicious/noExplicitAny: JSON responses are read field by field.
  async post(path: string, body: unknown, key?: string, at?: number): Promise<any> {
    const server = this.servers[at ?? this.turn++ % this.servers.length];
    const headers: Record<string, string> = {
      "X-API-Key": this.apiKey,
      "Content-Type": "application/json",
    };
    if (key) headers["Idempotency-Key"] = key;
    const startedAt = performance.now();
    try {
      const res = await fetch(`${server?.base}${path}`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      // biome-ignore lint/suspicious/noExplicitAny: JSON responses are read field by field.
      const json: any = await res.json();
      this.replies.push({
        status: res.status,
        code: json?.error?.code,
        startedAt,
        ms: performance.now() - startedAt,
      });
      return { status: res.status, json };
    } catch (err) {
      // A refused or cut connection (a killed server): the outcome is unknown.
      this.replies.push({ status: 0, startedAt, ms: performance.now() - startedAt });
      return { status: 0, json: { error: String(err) } };
    }
  }

  /** Sends a keyed write and records it; the ack is kept only for a 200. */
  async write(path: string, body: Record<string, unknown>): Promise<Sent> {
    const entry: Sent = { key: randomUUID(), path, body };
    this.sent.push(entry);
    const { status, json } = await this.post(path, body, entry.key);
    if (status === 200) entry.ack = json;
    else if (status !== 0 && status !== 503) {
      throw new Error(`${path} answered ${status}: ${JSON.stringify(json)}`);
    }
    return entry;
  }

  async worker(): Promise<void> {
    while (!this.stopped) {
      const accountId = `acct-${Math.floor(Math.random() * ACCOUNTS)}`;
      if (Math.random() < 0.5) {
        await this.write("/v1/accounts/credits/deduct", { accountId, amount: DEDUCT });
      } else {
        const hold = await this.write("/v1/reservations/create", { accountId, amount: HOLD });
        if (hold.ack) {
          await this.write("/v1/reservations/confirm", {
            reservationId: hold.ack.reservation.id,
            actualAmount: ACTUAL,
          });
        }
      }
      // While a server or the database is away, pace the retries of this client.
      const last = this.replies.at(-1);
      if (last && last.status !== 200) await sleep(50);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The postgres round's outage: stop PostgreSQL immediately, watch the servers, start it. */
async function outage(r: Round): Promise<string> {
  await cluster("crash");
  const down = performance.now();
  await sleep(OUTAGE_MS / 2);
  const ready = await Promise.all(
    r.servers.map((s) => fetch(`${s.base}/ready`, { signal: AbortSignal.timeout(10_000) })),
  );
  check(
    ready.every((res) => res.status === 503),
    `/ready answered ${ready.map((x) => x.status)}`,
  );
  await sleep(OUTAGE_MS / 2);
  const upAt = performance.now();
  await cluster("resume");
  const during = r.replies.filter((x) => x.startedAt > down + 100 && x.startedAt < upAt);
  check(during.length > 0, "no request was sent while PostgreSQL was down");
  for (const x of during) {
    check(x.status === 503 && x.code === "SERVICE_UNAVAILABLE", `outage answer ${x.status}`);
    check(x.ms < 5000, `an outage answer took ${Math.round(x.ms)} ms`);
  }
  // Every server serves again by itself.
  const recovered: number[] = [];
  for (const s of r.servers) {
    const started = performance.now();
    for (;;) {
      const res = await fetch(`${s.base}/ready`).catch(() => undefined);
      if (res?.status === 200) break;
      check(performance.now() - started < 30_000, `${s.base} not ready 30 s after restart`);
      await sleep(100);
    }
    recovered.push(performance.now() - upAt);
  }
  const firstOk = r.replies.find((x) => x.startedAt >= upAt && x.status === 200);
  check(firstOk !== undefined || r.stopped, "no write succeeded after the restart");
  const slowest = Math.max(...during.map((x) => x.ms));
  return `${during.length} requests during the outage, all 503 (slowest ${Math.round(slowest)} ms), servers ready ${Math.round(Math.max(...recovered))} ms after PostgreSQL`;
}

async function runRound(kind: Kind): Promise<string> {
  const r = new Round();
  try {
    await r.setUp();
    for (let i = 0; i < ACCOUNTS; i++) {
      await r.post("/v1/accounts/create", { externalId: `acct-${i}` });
      await r.post("/v1/accounts/credits/add", { accountId: `acct-${i}`, amount: FUNDING });
    }
    r.replies.length = 0;
    const workers = Array.from({ length: WORKERS }, () => r.worker());
    await sleep(500 + Math.random() * 1000);
    let note = "";
    if (kind === "kill-all") {
      await Promise.all(r.servers.map((s) => s.kill()));
      note = `kill -9 of all ${SERVERS} servers`;
      await Promise.all(r.servers.map((s) => s.start()));
      await sleep(500);
    } else if (kind === "kill-one") {
      const victim = r.servers[Math.floor(Math.random() * SERVERS)];
      await victim?.kill();
      await sleep(700);
      await victim?.start();
      note = "kill -9 of one server";
      await sleep(500);
    } else {
      note = await outage(r);
      await sleep(1000);
    }
    r.stopped = true;
    await Promise.all(workers);
    const acked = r.sent.filter((s) => s.ack);

    const db = new pg.Client({ connectionString: r.databaseUrl });
    await db.connect();
    try {
      const one = async (q: string, v: unknown[]) => (await db.query(q, v)).rows[0];
      for (const s of acked) {
        if (s.path.endsWith("/deduct")) {
          const row = await one("SELECT id FROM transactions WHERE id = $1", [s.ack.transactionId]);
          check(row !== undefined, `acknowledged deduct lost: ${s.key}`);
        } else if (s.path.endsWith("/create")) {
          const row = await one("SELECT id FROM reservations WHERE id = $1", [
            s.ack.reservation.id,
          ]);
          check(row !== undefined, `acknowledged hold lost: ${s.key}`);
        } else {
          const row = await one("SELECT status FROM reservations WHERE id = $1", [
            s.ack.reservationId,
          ]);
          check(row?.status === "confirmed", `acknowledged confirm lost: ${s.key}`);
        }
      }
      // Replay what was sent but not acknowledged, in order, each with its key.
      const unacked = r.sent.filter((s) => !s.ack);
      for (const s of unacked) {
        const { status, json } = await r.post(s.path, s.body, s.key);
        check(status === 200, `replay of ${s.path} answered ${status}: ${JSON.stringify(json)}`);
      }
      const count = async (q: string) => Number((await one(q, []))?.n);
      const sentTo = (path: string) => r.sent.filter((s) => s.path.endsWith(path)).length;
      const deducts = await count("SELECT count(*) AS n FROM transactions WHERE source = 'deduct'");
      const holds = await count("SELECT count(*) AS n FROM reservations");
      const confirms = await count(
        "SELECT count(*) AS n FROM transactions WHERE source = 'reservation'",
      );
      const keys = await count("SELECT count(*) AS n FROM idempotency_keys");
      check(deducts === sentTo("/deduct"), `deductions ${deducts} != keys ${sentTo("/deduct")}`);
      check(holds === sentTo("/reservations/create"), `holds ${holds} != keys sent`);
      check(confirms === sentTo("/confirm"), `confirmations ${confirms} != keys sent`);
      check(keys === r.sent.length, `stored keys ${keys} != keys sent ${r.sent.length}`);
      const total = await count("SELECT sum(balance_micros) AS n FROM accounts");
      const expected = (ACCOUNTS * FUNDING - deducts * DEDUCT - confirms * ACTUAL) * 1_000_000;
      check(total === expected, `balances sum ${total} != expected ${expected}`);
      const verify = spawnSync(process.execPath, [cli, "verify"], {
        env: r.env,
        encoding: "utf8",
      });
      check(verify.status === 0, `ledger verify failed: ${verify.stdout}${verify.stderr}`);
      return `${kind}: ${note}; ${r.sent.length} writes sent, ${acked.length} acknowledged, ${unacked.length} replayed with their keys; ${deducts} deductions, ${confirms} confirmations, ${holds} holds, each once; verify OK`;
    } finally {
      await db.end();
    }
  } finally {
    await r.tearDown();
  }
}

async function main(): Promise<void> {
  for (const kind of ROUNDS) {
    if (kind !== "kill-all" && kind !== "kill-one" && kind !== "postgres") {
      throw new Error(`unknown round ${kind}`);
    }
    console.log(await runRound(kind));
  }
  console.log(`crash test (PostgreSQL): ${ROUNDS.length} rounds passed`);
}

main().catch((err) => {
  console.error(`crash test (PostgreSQL) FAILED: ${err instanceof Error ? err.message : err}`);
  // The cluster may have been left stopped by a failed postgres round.
  spawnSync("bash", [clusterScript, "resume"], { stdio: "ignore" });
  process.exit(1);
});
