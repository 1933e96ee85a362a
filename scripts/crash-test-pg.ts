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
import { z } from "zod";
import {
  type Answer,
  ackOf,
  check,
  checkAcknowledged,
  checkTotals,
  checkVerify,
  cli,
  fundAccounts,
  postJson,
  replayUnacknowledged,
  type Sent,
  sendOneWrite,
} from "./lib/crash.ts";
import { freePort, waitForHealth } from "./lib/net.ts";
import { dropDatabase } from "./lib/pg-admin.ts";

const ROUNDS = (process.env.CRASH_PG_ROUNDS ?? "kill-all,kill-one,postgres").split(",");
const SERVERS = 3;
const WORKERS = 24;
/** How long PostgreSQL stays down in the postgres round, in ms. */
const OUTAGE_MS = 4000;
const clusterScript = fileURLToPath(new URL("../../scripts/pg-cluster.sh", import.meta.url));

type Kind = "kill-all" | "kill-one" | "postgres";

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
    await dropDatabase(adminUrl(), this.dbName);
  }

  /** POSTs to server `at`, or to the next one in turn; status 0 when the connection failed. */
  post = async (path: string, body: unknown, key?: string, at?: number): Promise<Answer> => {
    const server = this.servers[at ?? this.turn++ % this.servers.length];
    const startedAt = performance.now();
    try {
      const signal = AbortSignal.timeout(15_000);
      const answer = await postJson(`${server?.base}`, this.apiKey, path, body, key, signal);
      this.replies.push({
        status: answer.status,
        code: errorCode(answer.json),
        startedAt,
        ms: performance.now() - startedAt,
      });
      return answer;
    } catch (err) {
      // A refused or cut connection (a killed server): the outcome is unknown.
      this.replies.push({ status: 0, startedAt, ms: performance.now() - startedAt });
      return { status: 0, json: { error: String(err) } };
    }
  };

  /** Sends a keyed write and records it; the ack is kept only for a 200. */
  write = async (path: string, body: Record<string, unknown>): Promise<Sent> => {
    const entry: Sent = { key: randomUUID(), path, body };
    this.sent.push(entry);
    const { status, json } = await this.post(path, body, entry.key);
    if (status === 200) entry.ack = ackOf(path, json);
    else if (status !== 0 && status !== 503) {
      throw new Error(`${path} answered ${status}: ${JSON.stringify(json)}`);
    }
    return entry;
  };

  async worker(): Promise<void> {
    while (!this.stopped) {
      await sendOneWrite(this.write);
      // While a server or the database is away, pace the retries of this client.
      const last = this.replies.at(-1);
      if (last && last.status !== 200) await sleep(50);
    }
  }
}

const errorBody = z.object({ error: z.object({ code: z.string() }) });

/** The `error.code` of an error answer's body, if it has one. */
function errorCode(json: unknown): string | undefined {
  return errorBody.safeParse(json).data?.error.code;
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
    await fundAccounts(r.post);
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
      await checkAcknowledged(r.sent, {
        transactionExists: async (id) =>
          (await one("SELECT id FROM transactions WHERE id = $1", [id])) !== undefined,
        reservationStatus: async (id) =>
          (await one("SELECT status FROM reservations WHERE id = $1", [id]))?.status,
      });
      const replayed = await replayUnacknowledged(r.sent, r.post);
      const count = async (q: string) => Number((await one(q, []))?.n);
      const deducts = await count("SELECT count(*) AS n FROM transactions WHERE source = 'deduct'");
      const holds = await count("SELECT count(*) AS n FROM reservations");
      const confirms = await count(
        "SELECT count(*) AS n FROM transactions WHERE source = 'reservation'",
      );
      const keys = await count("SELECT count(*) AS n FROM idempotency_keys");
      check(keys === r.sent.length, `stored keys ${keys} != keys sent ${r.sent.length}`);
      const balanceMicros = await count("SELECT sum(balance_micros) AS n FROM accounts");
      checkTotals(r.sent, { deducts, holds, confirms, balanceMicros });
      checkVerify(r.env);
      return `${kind}: ${note}; ${r.sent.length} writes sent, ${acked.length} acknowledged, ${replayed} replayed with their keys; ${deducts} deductions, ${confirms} confirmations, ${holds} holds, each once; verify OK`;
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
