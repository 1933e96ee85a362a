/**
 * `ledger restore FILE` never changes FILE or the files beside it (docs/operations.md, "Backups
 * and restore"): a partial backup (a copy killed mid-way, its rollback journal beside it) is
 * refused, byte for byte as it was; a backup whose last writes live in the WAL beside it is
 * restored with them, and FILE, its WAL and its index are unchanged; a restore refused while a
 * service uses the database changes nothing either. The guarantees of a restore hold as well:
 * the previous database kept complete, `verify` passing. SQLite only; needs `npm run build`.
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { verifyLedger } from "../src/ledger/verify.ts";
import {
  bigDatabase,
  hashes,
  killBackupMidway,
  openFile,
  withNeighbours,
} from "./backup-helpers.ts";
import { sqliteOnly } from "./pg-harness.ts";
import { databaseLine, runCli, spawnServer } from "./processes.ts";

/** The external ids of the accounts in the database file at `path`. */
async function externalIds(path: string): Promise<string[]> {
  const db = openFile(path);
  try {
    const rows = await db
      .selectFrom("accounts")
      .select("external_id")
      .orderBy("external_id")
      .execute();
    return rows.map((r) => r.external_id);
  } finally {
    await db.destroy();
  }
}

/**
 * Turns the backup at `path` into a WAL database and adds the account `id` in a process that is
 * then killed: the account lives only in the WAL beside the file.
 */
function addInWalAndCrash(path: string, id: string): Promise<void> {
  const script = `
    const D = require("libsql");
    const db = new D(${JSON.stringify(path)});
    db.exec("PRAGMA journal_mode = WAL");
    db.prepare("INSERT INTO accounts (id, project_id, external_id, name, email, metadata, plan_bucket_account_plan_id, created_at_ms, updated_at_ms) SELECT ?, id, ?, '', '', NULL, NULL, 0, 0 FROM projects LIMIT 1").run(["acc_" + ${JSON.stringify(id)}, ${JSON.stringify(id)}]);
    process.kill(process.pid, "SIGKILL");`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script], {
      cwd: new URL("..", import.meta.url).pathname,
    });
    child.on("exit", (_code, signal) =>
      signal === "SIGKILL" ? resolve() : reject(new Error("the writer did not crash")),
    );
  });
}

describe.runIf(sqliteOnly)("ledger restore never changes the backup or its neighbours", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ledger-restore-input-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a partial backup with its journal beside it, leaving both as they were", async () => {
    const live = join(dir, "live.db");
    const env = { ...process.env, DATABASE_URL: `file:${live}`, LOG_LEVEL: "silent" };
    bigDatabase(env, live, 30_000);
    // What a killed backup leaves: the copy so far, and its journal.
    const killed = await killBackupMidway(env, dir, "copy.db", 2 * 1024 * 1024);
    const main = killed.find((name) => name.endsWith(".tmp"));
    const journal = killed.find((name) => name.endsWith(".tmp-journal"));
    expect(main && journal).toBeTruthy();
    const partial = join(dir, "partial.db");
    copyFileSync(join(dir, main ?? ""), partial);
    copyFileSync(join(dir, journal ?? ""), `${partial}-journal`);
    const input = hashes(withNeighbours(partial));
    expect(input[`${partial}-journal`]).not.toBe("missing");
    // The database's own files; an empty WAL, which SQLite removes whenever the last
    // connection closes, counts as none.
    const databaseFiles = () =>
      withNeighbours(live).filter(
        (f) => !f.endsWith("-shm") && existsSync(f) && statSync(f).size > 0,
      );
    const database = hashes(databaseFiles());
    const files = readdirSync(dir)
      .filter((f) => !f.startsWith("live.db"))
      .sort();

    const r = runCli(["restore", partial], env);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("nothing was changed");
    expect(hashes(withNeighbours(partial))).toEqual(input);
    expect(hashes(databaseFiles())).toEqual(database);
    expect(
      readdirSync(dir)
        .filter((f) => !f.startsWith("live.db"))
        .sort(),
    ).toEqual(files);
    expect(runCli(["verify"], env).status).toBe(0);
  }, 120_000);

  it("restores a backup with its WAL beside it, WAL included, and changes none of them", async () => {
    const source = join(dir, "source.db");
    const sourceEnv = { ...process.env, DATABASE_URL: `file:${source}`, LOG_LEVEL: "silent" };
    expect(runCli(["keys", "create", "--project", "p"], sourceEnv).status).toBe(0);
    const backup = join(dir, "backup.db");
    expect(runCli(["backup", backup], sourceEnv).status).toBe(0);
    await addInWalAndCrash(backup, "only-in-the-wal");
    expect(existsSync(`${backup}-wal`)).toBe(true);
    const input = hashes(withNeighbours(backup));
    expect(input[`${backup}-shm`]).not.toBe("missing");

    // The database to restore into, served by a running service: refused, nothing changed.
    const target = join(dir, "target.db");
    const env = { ...process.env, DATABASE_URL: `file:${target}`, LOG_LEVEL: "silent" };
    expect(runCli(["keys", "create", "--project", "before"], env).status).toBe(0);
    const server = await spawnServer({ ...env, SCHEDULER_ENABLED: "false" });
    try {
      const refused = runCli(["restore", backup], env);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain("in use by another process");
      expect(hashes(withNeighbours(backup))).toEqual(input);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }

    const r = runCli(["restore", backup], env);
    expect(r.stderr).toBe(databaseLine(env));
    expect(r.status).toBe(0);
    expect(hashes(withNeighbours(backup))).toEqual(input);
    expect(await externalIds(target)).toEqual(["only-in-the-wal"]);
    const db = openFile(target);
    expect((await verifyLedger(db, Date.now())).problems).toEqual([]);
    await db.destroy();
    // The previous database is kept, complete.
    const previous = /kept as (\S+)/.exec(r.stdout)?.[1] ?? "";
    expect(previous).toMatch(/target\.db\.before-restore-\d{8}T\d{6}Z$/);
    const kept = openFile(previous);
    expect(await kept.selectFrom("projects").select("name").execute()).toEqual([
      { name: "before" },
    ]);
    await kept.destroy();
    expect(readdirSync(dir).filter((f) => f.includes(".tmp"))).toEqual([]);
    expect(runCli(["verify"], env).status).toBe(0);
  }, 60_000);
});
