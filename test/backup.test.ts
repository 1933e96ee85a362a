/**
 * Backups of the embedded database: `ledger backup` while a real service takes writes (every
 * write acknowledged before it began is in the copy, which passes `verify`), scheduled backups
 * (exactly BACKUP_KEEP kept, never more at any moment, no temporary file left, failures counted
 * and harmless), and `ledger restore` of a good backup (the previous database kept complete,
 * its WAL included), a corrupt one, one that fails the ledger's invariants, and while a service
 * uses the database. Needs `npm run build`.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kysely } from "kysely";
import LibsqlDatabase from "libsql";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { startBackupSchedule } from "../src/backup/scheduled.ts";
import { NativeSqliteDialect } from "../src/db/native-driver.ts";
import type { DB } from "../src/db/schema.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { createMetrics } from "../src/metrics.ts";
import { fundedAccount, makeLedger } from "./harness.ts";
import { sqliteOnly } from "./pg-harness.ts";
import { databaseLine, runCli, runCliAsync, spawnServer } from "./processes.ts";

const KEY = "ldg_backup_test_key_0123456789abcdef";

/** Opens a database file for reading in the test. */
function openFile(path: string): Kysely<DB> {
  return new Kysely<DB>({ dialect: new NativeSqliteDialect(new LibsqlDatabase(path)) });
}

/**
 * The sha256 of each file of the database (main, -wal, -shm, -journal), to prove nothing
 * changed. `-shm` is left out while a service runs: it is that service's own index, which its
 * reads update.
 */
function fingerprint(path: string, options: { index?: boolean } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const suffixes =
    options.index === false ? ["", "-wal", "-journal"] : ["", "-wal", "-shm", "-journal"];
  for (const suffix of suffixes) {
    const file = `${path}${suffix}`;
    if (existsSync(file)) {
      out[suffix || "db"] = createHash("sha256").update(readFileSync(file)).digest("hex");
    }
  }
  return out;
}

describe("ledger backup while the service takes writes", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ledger-backup-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("holds every write acknowledged before it began, and passes verify", async () => {
    const env = {
      ...process.env,
      DATABASE_URL: `file:${join(dir, "live.db")}`,
      LOG_LEVEL: "silent",
      LEDGER_BOOTSTRAP_API_KEY: KEY,
    };
    const server = await spawnServer(env);
    const acknowledged: { description: string; at: number }[] = [];
    let writing = true;
    const post = (path: string, body: object) =>
      fetch(`${server.base}${path}`, {
        method: "POST",
        headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    const writer = async (w: number) => {
      const created = await post("/v1/accounts/create", { externalId: `writer-${w}` });
      expect(created.status).toBe(200);
      for (let i = 0; writing; i++) {
        const description = `op-${w}-${i}`;
        const res = await post("/v1/accounts/credits/add", {
          accountId: `writer-${w}`,
          amount: 1.25,
          description,
        });
        expect(res.status).toBe(200);
        acknowledged.push({ description, at: performance.now() });
      }
    };
    try {
      const writers = [0, 1, 2, 3, 4, 5, 6, 7].map(writer);
      // Start the backup once the writers have a history behind them (on a busy machine that
      // takes longer than on an idle one), bounded so a stuck writer fails the test.
      const deadline = performance.now() + 20_000;
      while (acknowledged.length <= 60 && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const began = performance.now();
      const backup = await runCliAsync(["backup", join(dir, "copy.db")], env);
      const writesDuringBackup = acknowledged.filter((a) => a.at > began).length;
      writing = false;
      await Promise.all(writers);
      expect(backup.stderr).toBe(databaseLine(env));
      expect(backup.status).toBe(0);
      expect(backup.stdout).toMatch(
        /^backup written to .*copy\.db \(\d+ bytes; checked: 8 accounts/,
      );
      // The writers really ran while the backup was taken.
      expect(writesDuringBackup).toBeGreaterThan(0);

      const copy = openFile(join(dir, "copy.db"));
      const rows = await copy.selectFrom("transactions").select("description").execute();
      const inCopy = new Set(rows.map((r) => r.description));
      const before = acknowledged.filter((a) => a.at < began);
      expect(before.length).toBeGreaterThan(50);
      for (const a of before) expect(inCopy.has(a.description)).toBe(true);
      const report = await verifyLedger(copy, Date.now());
      expect(report.problems).toEqual([]);
      expect(report.transactions).toBe(rows.length);
      await copy.destroy();
      // No temporary file beside it.
      expect(readdirSync(dir).filter((f) => f.startsWith(".") || f.includes("copy.db-"))).toEqual(
        [],
      );
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  }, 60_000);

  it("refuses an existing file and a database that is not a local file", () => {
    const env = { ...process.env, DATABASE_URL: `file:${join(dir, "l.db")}`, LOG_LEVEL: "silent" };
    // The database exists: only serve, migrate, keys create and restore make one (operations.md).
    expect(runCli(["migrate"], env).status).toBe(0);
    writeFileSync(join(dir, "taken.db"), "keep me");
    const taken = runCli(["backup", join(dir, "taken.db")], env);
    expect(taken.status).toBe(1);
    expect(taken.stderr).toContain("already exists");
    expect(readFileSync(join(dir, "taken.db"), "utf8")).toBe("keep me");

    const pg = runCli(["backup", join(dir, "pg.db")], {
      ...env,
      DATABASE_URL: "postgres://ledger:secret@127.0.0.1:5/ledger",
    });
    expect(pg.status).not.toBe(0);
    expect(pg.stderr).toContain("pg_dump");
    const remote = runCli(["backup", join(dir, "r.db")], {
      ...env,
      DATABASE_URL: "libsql://example.turso.io",
    });
    expect(remote.status).not.toBe(0);
    expect(remote.stderr).toContain("the database's own");
    expect(existsSync(join(dir, "pg.db"))).toBe(false);
    expect(existsSync(join(dir, "r.db"))).toBe(false);
  });
});

describe.runIf(sqliteOnly)("scheduled backups (SQLite only: backups of the embedded file)", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });

  it("keep exactly BACKUP_KEEP, never more at any moment, and leave no temporary file", async () => {
    const t = await makeLedger();
    cleanups.push(t.close);
    await fundedAccount(t, "a", 10);
    const dbPath = join(t.dir, "ledger.db");
    const backupDir = join(t.dir, "backups", "nested"); // created when missing
    const metrics = createMetrics({ processMetrics: false });
    const logged: string[] = [];
    const logger = {
      info: (_: object, msg?: string) => logged.push(`info ${msg}`),
      warn: (_: object, msg?: string) => logged.push(`warn ${msg}`),
      error: (_: object, msg?: string) => logged.push(`error ${msg}`),
    };
    const schedule = startBackupSchedule({
      databasePath: dbPath,
      dir: backupDir,
      cron: "* * * * * *",
      keep: 3,
      logger,
      metrics,
    });
    let most = 0;
    const finished = () =>
      existsSync(backupDir)
        ? readdirSync(backupDir).filter((f) => /^ledger-\d{8}T\d{6}Z\.db$/.test(f))
        : [];
    const deadline = Date.now() + 15_000;
    let writes = 0;
    while (logged.filter((l) => l === "info backup written").length < 5 && Date.now() < deadline) {
      most = Math.max(most, finished().length);
      if (writes++ % 10 === 0)
        await t.api("POST", "/v1/accounts/credits/add", {
          body: { accountId: "a", amount: 1 },
        });
      await new Promise((r) => setTimeout(r, 10));
    }
    await schedule.stop();
    expect(logged.filter((l) => l === "info backup written").length).toBeGreaterThanOrEqual(5);
    expect(logged.filter((l) => l.startsWith("error"))).toEqual([]);
    expect(most).toBeLessThanOrEqual(3);
    const kept = finished();
    expect(kept).toHaveLength(3);
    expect(readdirSync(backupDir).sort()).toEqual([...kept].sort());
    // Each is a complete ledger.
    for (const name of kept) {
      const copy = openFile(join(backupDir, name));
      expect((await verifyLedger(copy, Date.now())).problems).toEqual([]);
      expect(await copy.selectFrom("accounts").select("external_id").execute()).toEqual([
        { external_id: "a" },
      ]);
      await copy.destroy();
    }
    const text = await metrics.render();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
    expect(value("ledger_backup_runs_total")).toBeGreaterThanOrEqual(5);
    expect(value("ledger_backup_failures_total")).toBe(0);
    expect(value("ledger_backup_last_success_timestamp_seconds")).toBeGreaterThan(
      Date.now() / 1000 - 10,
    );
  }, 30_000);

  it("a failed backup is logged and counted, and neither replaces nor removes a good one", async () => {
    const t = await makeLedger();
    cleanups.push(t.close);
    await fundedAccount(t, "a", 10);
    const backupDir = join(t.dir, "backups");
    const metrics = createMetrics({ processMetrics: false });
    const errors: object[] = [];
    let now = Date.parse("2026-01-01T00:00:00Z");
    const schedule = startBackupSchedule({
      databasePath: join(t.dir, "ledger.db"),
      dir: backupDir,
      cron: "0 0 0 1 1 *",
      keep: 2,
      logger: { info() {}, warn() {}, error: (o: object) => errors.push(o) },
      metrics,
      clock: () => now,
    });
    expect(await schedule.runNow()).not.toBeNull();
    now += 1000;
    expect(await schedule.runNow()).not.toBeNull();
    const good = readdirSync(backupDir).sort();
    expect(good).toEqual(["ledger-20260101T000000Z.db", "ledger-20260101T000001Z.db"]);
    const before = good.map((f) => fingerprint(join(backupDir, f)));

    // Break an invariant in the live database: a balance its ledger does not explain.
    await t.ledger.queue.run((trx) =>
      trx.updateTable("accounts").set({ balance_micros: 99_000_000 }).execute(),
    );
    now += 1000;
    expect(await schedule.runNow()).toBeNull();
    expect(readdirSync(backupDir).sort()).toEqual(good);
    expect(good.map((f) => fingerprint(join(backupDir, f)))).toEqual(before);
    expect(errors).toEqual([
      expect.objectContaining({ err: expect.stringContaining("failed its checks") }),
    ]);
    const text = await metrics.render();
    expect(text).toMatch(/^ledger_backup_failures_total 1$/m);
    expect(text).toMatch(/^ledger_backup_runs_total 3$/m);
    await schedule.stop();
  });
});

describe("ledger restore", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const dbPath = () => join(dir, "ledger.db");
  const externalIds = async (path: string) => {
    const db = openFile(path);
    const rows = await db
      .selectFrom("accounts")
      .select("external_id")
      .orderBy("external_id")
      .execute();
    await db.destroy();
    return rows.map((r) => r.external_id);
  };
  /** Adds accounts to the database in a process that is then killed: its WAL keeps them. */
  const writeAndCrash = (...ids: string[]) =>
    new Promise<void>((resolve, reject) => {
      const script = `
        const D = require("libsql");
        const db = new D(${JSON.stringify(dbPath())});
        db.exec("PRAGMA journal_mode = WAL");
        for (const id of ${JSON.stringify(ids)}) {
          db.prepare("INSERT INTO accounts (id, project_id, external_id, name, email, metadata, plan_bucket_account_plan_id, created_at_ms, updated_at_ms) SELECT ?, id, ?, '', '', NULL, NULL, 0, 0 FROM projects LIMIT 1").run(["acc_" + id, id]);
        }
        process.kill(process.pid, "SIGKILL");`;
      const child = spawn(process.execPath, ["-e", script], {
        cwd: new URL("..", import.meta.url).pathname,
      });
      child.on("exit", (_code, signal) =>
        signal === "SIGKILL" ? resolve() : reject(new Error("the writer did not crash")),
      );
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ledger-restore-"));
    env = { ...process.env, DATABASE_URL: `file:${dbPath()}`, LOG_LEVEL: "silent" };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("puts a good backup in place and keeps the previous database complete, WAL included", async () => {
    expect(runCli(["keys", "create", "--project", "p"], env).status).toBe(0);
    await writeAndCrash("in-backup");
    expect(runCli(["backup", join(dir, "b.db")], env).status).toBe(0);
    await writeAndCrash("after-backup-1", "after-backup-2");
    // The last writes live only in the WAL of a crashed process.
    expect(readFileSync(`${dbPath()}-wal`).length).toBeGreaterThan(32);

    const r = runCli(["restore", join(dir, "b.db")], env);
    expect(r.stderr).toBe(databaseLine(env));
    expect(r.status).toBe(0);
    const previous = /kept as (\S+)/.exec(r.stdout)?.[1] ?? "";
    expect(previous).toMatch(/ledger\.db\.before-restore-\d{8}T\d{6}Z$/);
    expect(await externalIds(dbPath())).toEqual(["in-backup"]);
    expect(await externalIds(previous)).toEqual(["after-backup-1", "after-backup-2", "in-backup"]);
    expect(existsSync(`${dbPath()}-wal`)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes(".tmp"))).toEqual([]);
    expect(runCli(["verify"], env).status).toBe(0);
    // The restored database serves.
    const server = await spawnServer(env);
    expect((await fetch(`${server.base}/ready`)).status).toBe(200);
    server.child.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);
  }, 30_000);

  it("creates a missing database file and its folders, says where, and verify passes", async () => {
    expect(runCli(["keys", "create", "--project", "p"], env).status).toBe(0);
    await writeAndCrash("moved-1", "moved-2");
    expect(runCli(["backup", join(dir, "b.db")], env).status).toBe(0);
    // A new machine: neither the database file nor its folder exists.
    const target = join(dir, "new", "data", "ledger.db");
    const newEnv = { ...env, DATABASE_URL: `file:${target}` };

    const r = runCli(["restore", join(dir, "b.db")], newEnv);
    expect(r.stderr).toBe(databaseLine(newEnv));
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(
      `restored ${join(dir, "b.db")} into ${target}, a new database file (checked: 2 accounts, 0 transactions)\n`,
    );
    // No `.before-restore-` copy of a database that did not exist, and no temporary left.
    expect(readdirSync(join(dir, "new", "data"))).toEqual(["ledger.db"]);
    expect(await externalIds(target)).toEqual(["moved-1", "moved-2"]);
    const verified = runCli(["verify"], newEnv);
    expect(verified.stdout).toBe("verified 2 accounts, 0 transactions: OK\n");
    expect(verified.status).toBe(0);
  }, 30_000);

  it("creates nothing for a missing database when the backup is bad or missing", () => {
    writeFileSync(join(dir, "garbage.db"), "not a database at all, just text ".repeat(200));
    const newEnv = { ...env, DATABASE_URL: `file:${join(dir, "new", "data", "ledger.db")}` };
    const bad = runCli(["restore", join(dir, "garbage.db")], newEnv);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("failed its checks, nothing was changed");
    const missing = runCli(["restore", join(dir, "missing.db")], newEnv);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`no backup at ${join(dir, "missing.db")}`);
    // Not the file, nor the folders made for its checks.
    expect(readdirSync(dir)).toEqual(["garbage.db"]);
  });

  it("refuses a corrupt backup and one that fails verify, changing nothing", async () => {
    expect(runCli(["keys", "create", "--project", "p"], env).status).toBe(0);
    await writeAndCrash("live");
    expect(runCli(["backup", join(dir, "b.db")], env).status).toBe(0);
    const before = fingerprint(dbPath());

    const bytes = readFileSync(join(dir, "b.db"));
    const corrupt = Buffer.from(bytes);
    for (let i = 4096; i < corrupt.length; i += 4096) corrupt.fill(0x5a, i + 8, i + 600);
    writeFileSync(join(dir, "corrupt.db"), corrupt);
    const bad = runCli(["restore", join(dir, "corrupt.db")], env);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("failed its checks, nothing was changed");

    writeFileSync(join(dir, "garbage.db"), "not a database at all, just text ".repeat(200));
    expect(runCli(["restore", join(dir, "garbage.db")], env).status).toBe(1);

    const broken = openFile(join(dir, "b.db"));
    await broken
      .updateTable("accounts")
      .set({ balance_micros: 5_000_000 })
      .where("external_id", "=", "live")
      .execute();
    await broken.destroy();
    const unverified = runCli(["restore", join(dir, "b.db")], env);
    expect(unverified.status).toBe(1);
    expect(unverified.stderr).toContain("balance 5 != credits - debits 0");

    expect(fingerprint(dbPath())).toEqual(before);
    expect(
      readdirSync(dir).filter((f) => f.includes("before-restore") || f.includes(".tmp")),
    ).toEqual([]);
    expect(runCli(["restore", join(dir, "missing.db")], env).status).toBe(1);
  }, 30_000);

  it("refuses while a running service uses the database, changing nothing", async () => {
    expect(runCli(["migrate"], env).status).toBe(0);
    expect(runCli(["backup", join(dir, "b.db")], env).status).toBe(0);
    const server = await spawnServer({
      ...env,
      LEDGER_BOOTSTRAP_API_KEY: KEY,
      SCHEDULER_ENABLED: "false",
    });
    try {
      const before = fingerprint(dbPath(), { index: false });
      const r = runCli(["restore", join(dir, "b.db")], env);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("in use by another process");
      expect(fingerprint(dbPath(), { index: false })).toEqual(before);
      expect(
        readdirSync(dir).filter((f) => f.includes("before-restore") || f.includes(".tmp")),
      ).toEqual([]);
      // The service is unharmed.
      const res = await fetch(`${server.base}/v1/accounts/create`, {
        method: "POST",
        headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
        body: JSON.stringify({ externalId: "still-serving" }),
      });
      expect(res.status).toBe(200);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    // Once it has stopped, the same restore goes through.
    expect(runCli(["restore", join(dir, "b.db")], env).status).toBe(0);
    expect(await externalIds(dbPath())).toEqual([]);
  }, 30_000);
});
