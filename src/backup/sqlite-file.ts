/**
 * Low-level helpers for the backups of the embedded database: an online copy (`VACUUM INTO`),
 * the checks a copy must pass before it counts as a backup, an exclusive lock that tells whether
 * another process has the database open (and a read lock that says a copy is in use), fsync of
 * files and folders, and the UTC timestamps of backup names.
 *
 * The long statements (`VACUUM INTO`, `PRAGMA integrity_check`) run through libSQL's promise API
 * where the runtime can load it, which executes them off the JavaScript thread, so a scheduled
 * backup does not stall the requests the service is answering. Where it cannot be loaded (the
 * single binary embeds only the synchronous addon) they run synchronously.
 */
import { existsSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { Kysely, sql } from "kysely";
import LibsqlDatabase from "libsql";
import { migrateToLatest } from "../db/migrator.ts";
import { NativeSqliteDialect } from "../db/native-driver.ts";
import type { DB } from "../db/schema.ts";
import { verifyLedger } from "../ledger/verify.ts";

/** A failure the backup and restore commands report as one line and a non-zero exit. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupError";
  }
}

/** The part of libSQL's promise API used here. */
interface AsyncConnection {
  exec(sql: string): Promise<unknown>;
  prepare(sql: string): Promise<{ all(...params: unknown[]): Promise<unknown[]> }>;
  close(): void;
}
type AsyncConnectionClass = new (path: string) => AsyncConnection;

// Named through a variable so that a bundler (the single binary's) does not try to embed it.
const PROMISE_MODULE = "libsql/promise";
let asyncClass: AsyncConnectionClass | null | undefined;

function loadAsyncClass(): AsyncConnectionClass | null {
  if (asyncClass === undefined) {
    try {
      const loaded: AsyncConnectionClass = createRequire(import.meta.url)(PROMISE_MODULE);
      asyncClass = loaded;
    } catch {
      asyncClass = null;
    }
  }
  return asyncClass;
}

/** A connection for one long statement: asynchronous where possible, else synchronous. */
interface OneShotConnection {
  exec(sql: string): Promise<void>;
  all(sql: string): Promise<unknown[]>;
  close(): void;
}

function openOneShot(path: string): OneShotConnection {
  const Async = loadAsyncClass();
  if (Async) {
    const conn = new Async(path);
    return {
      exec: async (sql) => {
        await conn.exec(sql);
      },
      all: async (sql) => (await conn.prepare(sql)).all(),
      close: () => conn.close(),
    };
  }
  const conn = new LibsqlDatabase(path);
  return {
    exec: async (sql) => {
      conn.exec(sql);
    },
    all: async (sql) => conn.prepare(sql).all(),
    close: () => conn.close(),
  };
}

/** `'it''s'`: a string literal for SQL. */
function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * Copies the database at `sourcePath` into the new file `destPath` with `VACUUM INTO`: one read
 * transaction, so the copy is the state of one moment, every commit before it included (the
 * WAL's too), while other connections keep reading and writing. The copy is a rollback-journal
 * database without a WAL. It is not fsynced here (SQLite does not fsync it either).
 * @throws Error from SQLite, e.g. when `destPath` already exists and is not empty
 */
export async function vacuumInto(sourcePath: string, destPath: string): Promise<void> {
  const conn = openOneShot(sourcePath);
  try {
    // Only exec() is used on this connection: libSQL keeps a connection open while any
    // statement prepared on it is alive, and this one must close now, not at garbage collection.
    await conn.exec(`PRAGMA busy_timeout = 5000`);
    await conn.exec(`VACUUM INTO ${sqlString(destPath)}`);
  } finally {
    conn.close();
  }
}

/** What the checks found in a database file; `problems` is empty when it passed. */
export interface CheckReport {
  problems: string[];
  accounts: number;
  transactions: number;
}

/**
 * Checks a database file that no other process writes: `PRAGMA integrity_check`, that it is a
 * ledger (its tables exist), and every invariant `ledger verify` checks at `nowMs` (unless
 * `invariants` is false). With `migrate`, pending migrations are applied first (a backup taken
 * before an upgrade), which changes the file: only for a private copy.
 * @returns the problems found (never throws for a bad file; a file that is not a database is a
 *   problem like the others)
 */
export async function checkDatabaseFile(
  path: string,
  nowMs: number,
  options: { migrate?: boolean; invariants?: boolean } = {},
): Promise<CheckReport> {
  const report: CheckReport = { problems: [], accounts: 0, transactions: 0 };
  if (!existsSync(path)) {
    report.problems.push(`${path} does not exist`);
    return report;
  }
  try {
    const integrity = await integrityProblems(path);
    if (integrity.length > 0) {
      report.problems.push(...integrity.map((p) => `integrity_check: ${p}`));
      return report;
    }
    const db = new Kysely<DB>({ dialect: new NativeSqliteDialect(new LibsqlDatabase(path)) });
    try {
      const tables = await sql<{
        name: string;
      }>`SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'accounts'`.execute(db);
      if (tables.rows.length === 0) {
        report.problems.push("not a ledger database (no accounts table)");
        return report;
      }
      if (options.migrate) await migrateToLatest(db);
      if (options.invariants === false) return report;
      const verified = await verifyLedger(db, nowMs);
      report.problems.push(...verified.problems);
      report.accounts = verified.accounts;
      report.transactions = verified.transactions;
    } finally {
      await db.destroy();
    }
  } catch (err) {
    report.problems.push(err instanceof Error ? err.message : String(err));
  }
  return report;
}

async function integrityProblems(path: string): Promise<string[]> {
  const conn = openOneShot(path);
  try {
    const rows = await conn.all("PRAGMA integrity_check(20)");
    const lines = rows.map((row) =>
      row && typeof row === "object" ? String(Object.values(row)[0]) : String(row),
    );
    return lines.length === 1 && lines[0] === "ok" ? [] : lines;
  } finally {
    conn.close();
  }
}

/**
 * Takes an exclusive lock on the database file at `path` and keeps it until `close()`: no other
 * connection can read or write it meanwhile. A service holds a shared lock on its WAL database
 * for as long as it has it open, so this fails at once while any process uses the database.
 * @throws BackupError when another process has the database open
 */
export function lockExclusively(path: string): InstanceType<typeof LibsqlDatabase> {
  const conn = new LibsqlDatabase(path);
  try {
    // Only exec(): see vacuumInto. In EXCLUSIVE locking mode SQLite keeps every lock it takes;
    // on a WAL database the first read takes the file's EXCLUSIVE lock (the WAL index then lives
    // in this process's memory), on a rollback-journal one BEGIN EXCLUSIVE does.
    conn.exec("PRAGMA busy_timeout = 0");
    conn.exec("PRAGMA locking_mode = EXCLUSIVE");
    conn.exec("SELECT count(*) FROM sqlite_schema");
    conn.exec("BEGIN EXCLUSIVE");
    conn.exec("COMMIT");
    return conn;
  } catch (err) {
    conn.close();
    const code = err && typeof err === "object" && "code" in err ? String(err.code) : "";
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
      throw new BackupError(
        `${path} is in use by another process (a running service?): stop it first`,
      );
    }
    throw err;
  }
}

/**
 * Keeps a read lock (SQLite's SHARED lock) on the database file at `path` until `release()`:
 * another process cannot then take the exclusive lock `isLocked` tries for. A backup holds one
 * on its temporary copy from the end of `VACUUM INTO` (which holds its own while it writes)
 * until the copy has its name, so that no other backup takes the copy for a leftover.
 */
export function holdReadLock(path: string): { release: () => void } {
  const conn = new LibsqlDatabase(path);
  try {
    // Only exec(): see vacuumInto.
    conn.exec("BEGIN");
    conn.exec("SELECT count(*) FROM sqlite_schema");
  } catch (err) {
    conn.close();
    throw err;
  }
  return {
    release: () => {
      try {
        conn.exec("COMMIT");
      } finally {
        conn.close();
      }
    },
  };
}

/**
 * Whether some connection, of any process, holds a lock on the database file at `path` (so
 * that SQLite's exclusive lock cannot be had at once). A file that is not a database, or that
 * cannot be opened, holds none. Only for a file about to be removed: taking the lock rolls a
 * journal left beside the file back into it.
 */
export function isLocked(path: string): boolean {
  if (!existsSync(path)) return false;
  try {
    lockExclusively(path).close();
    return false;
  } catch (err) {
    return err instanceof BackupError;
  }
}

/** Flushes a file (or, on POSIX, a folder's entries) to stable storage. */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Removes `path` and any journal, WAL or shared-memory file SQLite may have left beside it. */
export async function removeDatabaseFiles(path: string): Promise<void> {
  await Promise.all(
    ["", "-journal", "-wal", "-shm"].map((suffix) => rm(`${path}${suffix}`, { force: true })),
  );
}

/** `20261123T101500Z`: the UTC second of `ms`, as in backup names. */
export function utcStamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}
