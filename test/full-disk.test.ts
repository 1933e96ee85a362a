/**
 * A full disk, the way it happens (docs/design.md, "When the database cannot write"): a real
 * `ledger serve` whose database lives on a small tmpfs (SQLite: the database file; PostgreSQL:
 * a tablespace holding the whole database), which a filling file then fills. Writes over HTTP
 * answer 503 SERVICE_UNAVAILABLE saying the database cannot write, never a 500; `/ready`
 * answers 503; the log names SQLite's or PostgreSQL's own error once, never a failed rollback;
 * the scheduled jobs log their failure once. Once the file is removed, writes succeed and
 * `/ready` answers 200 without a restart, every balance is exactly its acknowledged writes, and
 * `ledger verify` passes. Needs root to mount (skipped with the reason printed otherwise) and
 * `npm run build`.
 */
import { chmodSync, chownSync, statSync } from "node:fs";
import { dirname } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it, type TestContext } from "vitest";
import { sqliteOnly, TEST_ENGINE, testPgUrl, withDatabase } from "./pg-harness.ts";
import {
  databaseLine,
  jsonLines,
  type LogLine,
  type RunningProcess,
  runCli,
  spawnServer,
} from "./processes.ts";
import { mountTmpfs, type Tmpfs } from "./tmpfs.ts";

const KEY = "ldg_full_disk_test_key_0123456789abcdef";
const WRITERS = 6;
const FUNDED_CREDITS = 10;

/** What the test cleans up, in order, however it ends. */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (err) {
      process.stderr.write(`cleanup failed: ${String(err)}\n`);
    }
  }
});

function mountOrSkip(ctx: TestContext, sizeMiB: number): Tmpfs {
  const mount = mountTmpfs(sizeMiB);
  if ("skip" in mount) {
    process.stderr.write(`full-disk test skipped: ${mount.skip}\n`);
    ctx.skip(mount.skip);
  }
  cleanups.push(() => mount.unmount());
  return mount;
}

type Post = (path: string, body: object) => Promise<{ status: number; body: unknown }>;

function client(server: RunningProcess): Post {
  return async (path, body) => {
    const res = await fetch(`${server.base}${path}`, {
      method: "POST",
      headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
}

async function readyStatus(server: RunningProcess): Promise<number> {
  return (await fetch(`${server.base}/ready`)).status;
}

/** An account's balance and reserved credits, as `GET /v1/accounts/balance` answers them. */
async function balanceOf(
  server: RunningProcess,
  accountId: string,
): Promise<{ balance: number; reserved: number }> {
  const res = await fetch(`${server.base}/v1/accounts/balance?accountId=${accountId}`, {
    headers: { "X-API-Key": KEY },
  });
  expect(res.status).toBe(200);
  const body: unknown = await res.json();
  const read = (name: string) =>
    body && typeof body === "object" && name in body ? Number(Reflect.get(body, name)) : Number.NaN;
  return { balance: read("balance"), reserved: read("reserved") };
}

/** Every writer adds 1 credit at a time until `stop()`; records what each status answered. */
function startWriters(post: Post) {
  const acknowledged = new Array<number>(WRITERS).fill(0);
  const unavailable: unknown[] = [];
  const unexpected: { status: number; body: unknown }[] = [];
  let writing = true;
  const loops = acknowledged.map(async (_, w) => {
    for (let i = 0; writing; i++) {
      const res = await post("/v1/accounts/credits/add", {
        accountId: `w-${w}`,
        amount: 1,
        description: `write ${i} of writer ${w} `.padEnd(400, "."),
      });
      if (res.status === 200) acknowledged[w] = (acknowledged[w] ?? 0) + 1;
      else if (res.status === 503) unavailable.push(res.body);
      else unexpected.push(res);
    }
  });
  return {
    acknowledged,
    unavailable,
    unexpected,
    stop: async () => {
      writing = false;
      await Promise.all(loops);
    },
  };
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, ms: number) {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const named = (lines: LogLine[], msg: string) => lines.filter((l) => l.msg === msg);

/**
 * The scenario on a running server whose database is on `disk`: fill, write, check, unfill,
 * check again. `underlying` matches the database's own error in the log; `sweeperFails`: the
 * reservation sweeper cannot end the expired holds while the disk is full; `probeFailsWhileFull`:
 * the probe write cannot succeed until the space is back. (On PostgreSQL a full tablespace still
 * takes a small write now and then, in blocks that aborted transactions gave back, so a probe
 * may succeed, and `/ready` answer 200, between two writes that fail.)
 */
async function fullDiskScenario(
  server: RunningProcess,
  disk: Tmpfs,
  options: { underlying: RegExp; sweeperFails: boolean; probeFailsWhileFull: boolean },
) {
  const { underlying } = options;
  const post = client(server);
  // Funded accounts, each with a hold that expires during the full period (the sweeper runs
  // every second and then has work it cannot write), and a pool of connections already open.
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      expect((await post("/v1/accounts/create", { externalId: `w-${w}` })).status).toBe(200);
      const funded = await post("/v1/accounts/credits/add", {
        accountId: `w-${w}`,
        amount: FUNDED_CREDITS,
      });
      expect(funded.status).toBe(200);
      const hold = { accountId: `w-${w}`, amount: 1, ttlSeconds: 1 };
      expect((await post("/v1/reservations/create", hold)).status).toBe(200);
    }),
  );
  expect(await readyStatus(server)).toBe(200);

  expect(disk.fill()).toBeGreaterThan(0);
  const writers = startWriters(post);
  // Until 30 writes were refused, or one was answered otherwise (a 500 ends it at once).
  await waitFor(
    "30 writes refused",
    () => writers.unavailable.length >= 30 || writers.unexpected.length > 0,
    30_000,
  );
  await writers.stop();
  expect(writers.unexpected).toEqual([]);
  for (const body of writers.unavailable) {
    expect(body).toEqual({
      success: false,
      error: { code: "SERVICE_UNAVAILABLE", message: expect.stringContaining("cannot write") },
    });
  }
  expect(await readyStatus(server)).toBe(503);
  if (options.probeFailsWhileFull) {
    // Still full, and quiet: the probe keeps failing, so /ready stays 503 without traffic.
    await new Promise((r) => setTimeout(r, 3500));
    expect(await readyStatus(server)).toBe(503);
  }

  let lines = jsonLines(server.stdout());
  const episodes = named(lines, "database cannot write");
  expect(episodes).toHaveLength(1);
  expect(episodes[0]?.level).toBe(50);
  expect(String(episodes[0]?.err)).toMatch(underlying);
  const refused = lines.filter(
    (l) => l.msg === "request" && l.status === 503 && l.route !== "/ready",
  );
  expect(refused.length).toBeGreaterThanOrEqual(30);
  for (const line of refused) expect(String(line.cause)).toMatch(underlying);
  expect(server.stdout()).not.toMatch(/cannot rollback|no transaction is active/);
  expect(named(lines, "unhandled error")).toEqual([]);

  disk.unfill();
  await waitFor(
    "/ready 200 once space is back",
    async () => (await readyStatus(server)) === 200,
    15_000,
  );
  for (let w = 0; w < WRITERS; w++) {
    const res = await post("/v1/accounts/credits/add", { accountId: `w-${w}`, amount: 1 });
    expect(res.status).toBe(200);
    writers.acknowledged[w] = (writers.acknowledged[w] ?? 0) + 1;
  }
  // The sweeper catches up with the holds that expired meanwhile.
  await waitFor(
    "the expired holds released",
    async () => (await balanceOf(server, `w-${WRITERS - 1}`)).reserved === 0,
    10_000,
  );
  // A job that failed while the disk was full said so once, then, at its next run, that it
  // recovered (the jobs run every second here).
  const jobs = ["expire-reservations", "expire-grants", "grant-plans"];
  const failedJobs = () =>
    jobs.filter((job) =>
      jsonLines(server.stdout()).some((l) => l.msg === "job failed" && l.job === job),
    );
  const recovered = (job: string) =>
    jsonLines(server.stdout()).filter((l) => l.msg === "job recovered" && l.job === job);
  await waitFor(
    "the failed jobs recovered",
    () => failedJobs().every((job) => recovered(job).length > 0),
    10_000,
  );
  lines = jsonLines(server.stdout());
  expect(named(lines, "database can write again")).toHaveLength(1);
  for (const job of jobs) {
    const failed = lines.filter((l) => l.msg === "job failed" && l.job === job);
    const errors = failed.filter((l) => l.level === 50);
    expect(errors.length).toBeLessThanOrEqual(1);
    if (errors.length === 1) {
      expect(String(errors[0]?.err)).toMatch(underlying);
      expect(recovered(job)).toHaveLength(1);
    }
  }
  if (options.sweeperFails) {
    // The sweeper had work every second while the disk was full: it failed more than once, and
    // logged it once. (On PostgreSQL, ending a hold rewrites rows in pages that have room, and
    // may succeed on a full disk.)
    const sweeps = lines.filter((l) => l.msg === "job failed" && l.job === "expire-reservations");
    expect(sweeps.length).toBeGreaterThan(1);
    expect(sweeps.filter((l) => l.level === 50)).toHaveLength(1);
  }

  // Exactly the acknowledged writes: nothing of a refused one was kept.
  for (let w = 0; w < WRITERS; w++) {
    expect(await balanceOf(server, `w-${w}`)).toEqual({
      balance: FUNDED_CREDITS + (writers.acknowledged[w] ?? 0),
      reserved: 0,
    });
  }
  server.child.kill("SIGTERM");
  expect((await server.exited).code).toBe(0);
}

function serverEnv(databaseUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    LEDGER_BOOTSTRAP_API_KEY: KEY,
    LOG_LEVEL: "debug",
    EXPIRE_CRON: "* * * * * *",
    GRANT_CRON: "* * * * * *",
  };
}

async function startServer(env: NodeJS.ProcessEnv): Promise<RunningProcess> {
  const server = await spawnServer(env);
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill("SIGKILL");
      await server.exited;
    }
  });
  return server;
}

describe.runIf(sqliteOnly)("a full disk under SQLite", () => {
  // Both drivers of the embedded file: libSQL's native one (the default) and @libsql/client.
  for (const driver of ["native", "client"]) {
    it(`503 while the disk is full, writes and /ready back once space is (${driver} driver)`, async (ctx) => {
      const disk = mountOrSkip(ctx, 24);
      const env = { ...serverEnv(`file:${disk.dir}/ledger.db`), DATABASE_DRIVER: driver };
      const server = await startServer(env);
      await fullDiskScenario(server, disk, {
        underlying: /^SQLITE_(FULL|IOERR)/,
        sweeperFails: true,
        probeFailsWhileFull: true,
      });
      const verify = runCli(["verify"], env);
      expect(verify.stderr).toBe(databaseLine(env));
      expect(verify.status).toBe(0);
    }, 90_000);
  }
});

/** A superuser session on the test cluster (its socket folder, as scripts/pg-cluster.sh has it). */
async function superuser(): Promise<pg.Client | string> {
  const data = process.env.LEDGER_PG_DATA;
  if (!data) return "LEDGER_PG_DATA is not set (scripts/pg-cluster.sh sets it)";
  const client = new pg.Client({
    host: dirname(data),
    port: Number(new URL(testPgUrl()).port),
    user: "postgres",
    database: "postgres",
  });
  try {
    await client.connect();
    return client;
  } catch (err) {
    return `no superuser session on the test cluster: ${(err as Error).message}`;
  }
}

describe.runIf(TEST_ENGINE === "postgres")("a full disk under PostgreSQL", () => {
  it("503 while the tablespace is full, writes and /ready back once space is", async (ctx) => {
    const admin = await superuser();
    if (typeof admin === "string") {
      process.stderr.write(`full-disk test skipped: ${admin}\n`);
      ctx.skip(admin);
      return;
    }
    cleanups.push(() => admin.end());
    const disk = mountOrSkip(ctx, 24);
    // The cluster's owner (the `postgres` user when the tests run as root) must own the folder.
    const owner = statSync(process.env.LEDGER_PG_DATA ?? "");
    chownSync(disk.dir, owner.uid, owner.gid);
    chmodSync(disk.dir, 0o700);
    const suffix = `${process.pid}_${Date.now()}`;
    const space = `ledger_full_${suffix}`;
    const database = `ledger_full_${suffix}`;
    const role = decodeURIComponent(new URL(testPgUrl()).username);
    await admin.query(`CREATE TABLESPACE ${space} LOCATION '${disk.dir}'`);
    cleanups.push(() => admin.query(`DROP TABLESPACE IF EXISTS ${space}`).then(() => undefined));
    await admin.query(`CREATE DATABASE ${database} OWNER "${role}" TABLESPACE ${space}`);
    cleanups.push(() =>
      admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).then(() => undefined),
    );
    const env = serverEnv(withDatabase(testPgUrl(), database));
    const server = await startServer(env);
    await fullDiskScenario(server, disk, {
      underlying: /^(53\d{3}|58030)\b/,
      sweeperFails: false,
      probeFailsWhileFull: false,
    });
    const verify = runCli(["verify"], env);
    expect(verify.stderr).toBe(databaseLine(env));
    expect(verify.status).toBe(0);
  }, 90_000);
});
