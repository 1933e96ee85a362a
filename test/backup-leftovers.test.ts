/**
 * What a killed backup leaves (docs/operations.md, "Backups and restore"): a `ledger backup`
 * SIGKILLed mid-way leaves its temporary files; the next backup into the same folder removes
 * them (and those named as earlier versions named them), writes a complete backup that passes
 * `verify`, and leaves every other file alone, including a backup that another process is
 * writing at that moment. The rules of the removal, file by file, in process. SQLite only (the
 * backups are of the embedded file); needs `npm run build`.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import LibsqlDatabase from "libsql";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  claimTemporary,
  origin,
  removeAbandonedTemporaries,
  STALE_MS,
  temporaryNameFor,
} from "../src/backup/temporaries.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import {
  bigDatabase,
  filesMatching,
  hashes,
  killBackupMidway,
  openFile,
} from "./backup-helpers.ts";
import { sqliteOnly } from "./pg-harness.ts";
import { databaseLine, runCli, runCliAsync } from "./processes.ts";

const ACCOUNTS = 60_000;
const OTHER_ORIGIN = "0badf00d";

/** The id of a process that has just ended (so none runs with it). */
function deadPid(): number {
  const pid = spawnSync(process.execPath, ["-e", ""]).pid;
  if (pid === undefined) throw new Error("no process id");
  return pid;
}

/** A process that holds SQLite's read lock on each of `paths` until it is killed. */
function holdLocks(paths: string[]): Promise<ChildProcess> {
  const script = `
    const D = require("libsql");
    const held = ${JSON.stringify(paths)}.map((path) => {
      const db = new D(path);
      db.exec("BEGIN");
      db.exec("SELECT count(*) FROM sqlite_schema");
      return db;
    });
    process.stdout.write("held\\n");
    setInterval(() => held.length, 60_000);`;
  const child = spawn(process.execPath, ["-e", script], {
    cwd: new URL("..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("held")) resolve(child);
    });
    child.on("exit", () => reject(new Error("the lock holder ended")));
  });
}

/** What `verify`'s checks find in the database file at `path`. */
async function checkedCopy(path: string) {
  const db = openFile(path);
  try {
    const report = await verifyLedger(db, Date.now());
    return { problems: report.problems, accounts: report.accounts };
  } finally {
    await db.destroy();
  }
}

describe.runIf(sqliteOnly)("leftovers of a killed ledger backup", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let backups: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ledger-leftovers-"));
    backups = join(dir, "backups");
    mkdirSync(backups);
    env = { ...process.env, DATABASE_URL: `file:${join(dir, "live.db")}`, LOG_LEVEL: "silent" };
    bigDatabase(env, join(dir, "live.db"), ACCOUNTS);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("are removed by the next backup into the folder, which is complete; other files stay", async () => {
    const killed = await killBackupMidway(env, backups, "second.db");
    expect(killed[0]).toMatch(new RegExp(`^\\.second\\.db\\.${origin()}\\.\\d+\\.tmp$`));
    // As an earlier version would have left the same: `.NAME.<pid>.tmp`, without an origin.
    const oldPid = deadPid();
    for (const name of killed) {
      const old = name.replace(/^\.second\.db\.[0-9a-f]{8}\.\d+\.tmp/, `.first.db.${oldPid}.tmp`);
      copyFileSync(join(backups, name), join(backups, old));
    }
    const first = filesMatching(backups, /^\.first\.db\./);
    expect(first.length).toBe(killed.length);

    // What must stay: files that are not ours, a finished backup, a temporary of another
    // machine that is still fresh. What must go too: one of another machine, long unchanged.
    const pid = deadPid();
    const keep: Record<string, string> = {
      "notes.txt": "the operator's notes",
      [`.editor-buffer.${pid}.tmp`]: "not a database, though named like an old temporary",
      [`.other.db.${OTHER_ORIGIN}.${pid}.tmp`]: "SQLite format 3\0 of another machine, fresh",
      "ledger-20260101T000000Z.db": "a finished backup",
    };
    for (const [name, text] of Object.entries(keep)) writeFileSync(join(backups, name), text);
    const stale = `.stale.db.${OTHER_ORIGIN}.${pid}.tmp`;
    writeFileSync(join(backups, stale), "SQLite format 3\0 abandoned long ago");
    const longAgo = (Date.now() - STALE_MS - 60_000) / 1000;
    utimesSync(join(backups, stale), longAgo, longAgo);
    const before = hashes(Object.keys(keep).map((name) => join(backups, name)));
    // The killed backup's files are still there, as it left them.
    expect(filesMatching(backups, /^\.second\.db\./)).toEqual(killed);

    const next = await runCliAsync(["backup", join(backups, "third.db")], env);
    expect(next.stderr).toBe(databaseLine(env));
    expect(next.status).toBe(0);
    expect(next.stdout).toContain("removed what killed backups had left in its folder");
    for (const name of [...first, ...killed, stale]) expect(next.stdout).toContain(name);
    expect(readdirSync(backups).sort()).toEqual([...Object.keys(keep), "third.db"].sort());
    expect(hashes(Object.keys(keep).map((name) => join(backups, name)))).toEqual(before);
    expect(await checkedCopy(join(backups, "third.db"))).toEqual({
      problems: [],
      accounts: ACCOUNTS,
    });
    expect(runCli(["verify"], env).status).toBe(0);
  }, 120_000);

  it("leave alone a backup that another process is writing", async () => {
    const slow = runCliAsync(["backup", join(backups, "slow.db")], env);
    const deadline = performance.now() + 30_000;
    while (filesMatching(backups, /^\.slow\.db\..*\.tmp$/).length === 0) {
      if (performance.now() > deadline) throw new Error("the slow backup never began");
      await new Promise((r) => setTimeout(r, 10));
    }
    const quick = await runCliAsync(["backup", join(backups, "quick.db")], env);
    expect(quick.stderr).toBe(databaseLine(env));
    expect(quick.status).toBe(0);
    expect(quick.stdout).not.toContain("removed");
    const slowDone = await slow;
    expect(slowDone.stderr).toBe(databaseLine(env));
    expect(slowDone.status).toBe(0);
    expect(readdirSync(backups).sort()).toEqual(["quick.db", "slow.db"]);
    for (const name of ["quick.db", "slow.db"]) {
      expect(await checkedCopy(join(backups, name))).toEqual({ problems: [], accounts: ACCOUNTS });
    }
  }, 120_000);
});

describe.runIf(sqliteOnly)("which temporaries a backup removes", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ledger-temporaries-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("ours that no process holds: by process id here, by age from elsewhere; nothing else", async () => {
    const dead = deadPid();
    const alive = process.ppid;
    const journal = Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7, 0, 0, 0, 0]);
    const sqlite = "SQLite format 3\0";
    const files: Record<string, string | Buffer> = {
      // This machine: by process id.
      [`.a.db.${origin()}.${dead}.tmp`]: sqlite,
      [`.a.db.${origin()}.${dead}.tmp-journal`]: journal,
      [`.b.db.${origin()}.${alive}.tmp`]: sqlite,
      [`.c.db.${origin()}.${process.pid}.tmp`]: sqlite,
      // Another machine: by age only.
      [`.d.db.${OTHER_ORIGIN}.${dead}.tmp`]: sqlite,
      [`.e.db.${OTHER_ORIGIN}.${alive}.tmp`]: sqlite,
      // Earlier versions' names: by process id, and only what SQLite wrote.
      [`.f.db.${dead}.tmp`]: sqlite,
      [`.g.db.${dead}.tmp`]: Buffer.alloc(4096),
      [`.g.db.${dead}.tmp-journal`]: journal,
      [`.h.db.${dead}.tmp`]: "some other program's file",
      [`.i.db.${alive}.tmp`]: sqlite,
      // Not ours at all.
      "j.db": sqlite,
      [`.k.db.${origin()}.${dead}.tmp.bak`]: sqlite,
      [`k.db.${origin()}.${dead}.tmp`]: sqlite,
    };
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    mkdirSync(join(dir, `.l.db.${origin()}.${dead}.tmp`));
    const longAgo = (Date.now() - STALE_MS - 60_000) / 1000;
    utimesSync(join(dir, `.e.db.${OTHER_ORIGIN}.${alive}.tmp`), longAgo, longAgo);
    // Named as abandoned, but another process holds a lock on them: in use, they stay.
    const lockedHere = `.n.db.${origin()}.${dead}.tmp`;
    const lockedElsewhere = `.o.db.${OTHER_ORIGIN}.${dead}.tmp`;
    for (const name of [lockedHere, lockedElsewhere]) {
      const db = new LibsqlDatabase(join(dir, name));
      db.exec("CREATE TABLE copied (x)");
      db.close();
    }
    // This process is writing one right now: it stays.
    const inProgress = temporaryNameFor(join(dir, "m.db"));
    writeFileSync(inProgress, sqlite);
    const claim = claimTemporary(inProgress);
    const holder = await holdLocks([join(dir, lockedHere), join(dir, lockedElsewhere)]);
    utimesSync(join(dir, lockedElsewhere), longAgo, longAgo);
    try {
      expect(await removeAbandonedTemporaries(dir)).toEqual(
        [
          `.a.db.${origin()}.${dead}.tmp`,
          `.a.db.${origin()}.${dead}.tmp-journal`,
          `.c.db.${origin()}.${process.pid}.tmp`,
          `.e.db.${OTHER_ORIGIN}.${alive}.tmp`,
          `.f.db.${dead}.tmp`,
          `.g.db.${dead}.tmp`,
          `.g.db.${dead}.tmp-journal`,
        ].sort(),
      );
    } finally {
      claim.release();
      holder.kill("SIGKILL");
    }
    expect(readdirSync(dir).sort()).toEqual(
      [
        `.b.db.${origin()}.${alive}.tmp`,
        `.d.db.${OTHER_ORIGIN}.${dead}.tmp`,
        `.h.db.${dead}.tmp`,
        `.i.db.${alive}.tmp`,
        "j.db",
        `.k.db.${origin()}.${dead}.tmp.bak`,
        `k.db.${origin()}.${dead}.tmp`,
        `.l.db.${origin()}.${dead}.tmp`,
        `.m.db.${origin()}.${process.pid}.tmp`,
        lockedHere,
        lockedElsewhere,
      ].sort(),
    );
  });
});
