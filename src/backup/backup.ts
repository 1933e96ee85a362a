/**
 * `ledger backup FILE` and each scheduled backup: an online, consistent copy of the embedded
 * database, written under a temporary name beside its destination, checked like `ledger verify`
 * checks the live database, then put in place. A copy that fails never takes a name that a good
 * backup could have, and its temporary files are removed whatever happens (see
 * docs/operations.md, "Backups and restore"). Before it writes, it removes what backups killed
 * mid-way left in its folder (src/backup/temporaries.ts).
 */
import { existsSync } from "node:fs";
import { link, mkdir, rename, stat, unlink } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { filePathOf } from "../db/client.ts";
import {
  BackupError,
  checkDatabaseFile,
  fsyncPath,
  holdReadLock,
  removeDatabaseFiles,
  vacuumInto,
} from "./sqlite-file.ts";
import { claimTemporary, removeAbandonedTemporaries, temporaryNameFor } from "./temporaries.ts";

/** A finished backup. */
export interface BackupResult {
  /** Absolute path of the backup file. */
  file: string;
  bytes: number;
  /** What the checks counted in the copy. */
  accounts: number;
  transactions: number;
  /** Files left in its folder by earlier backups that were killed, removed before it began. */
  removedLeftovers: string[];
}

/**
 * The path of the embedded database file named by `DATABASE_URL`.
 * @throws BackupError for a database that is not a local file (remote libSQL, PostgreSQL), whose
 *   backups are that database's own
 */
export function embeddedDatabasePath(databaseUrl: string): string {
  const path = filePathOf(databaseUrl);
  if (path !== null && path !== ":memory:") return resolve(path);
  const scheme = /^([a-z0-9+.-]+):/i.exec(databaseUrl)?.[1]?.toLowerCase() ?? "";
  if (scheme === "postgres" || scheme === "postgresql") {
    throw new BackupError(
      "DATABASE_URL is a PostgreSQL database: its backups are PostgreSQL's own (pg_dump, or base backups with WAL archiving), not `ledger backup`",
    );
  }
  throw new BackupError(
    "DATABASE_URL is not a local file database: backups of a remote libSQL database are the database's own (its provider's backups or point-in-time restore), not `ledger backup`",
  );
}

export interface WriteBackupOptions {
  /** Runs after the copy passed its checks, just before it takes its name (pruning). */
  beforePlace?: () => Promise<void>;
}

/**
 * Writes a checked backup of the database file `sourcePath` to `file`, which must not exist;
 * its folder is created when missing. Every write committed before the call began is in it.
 * @param nowMs the time the checks use (reservations past their expiry)
 * @throws BackupError when `file` exists, the database is missing, or the copy fails its checks;
 *   any other Error from SQLite or the file system. Nothing is left at `file` or beside it then.
 */
export async function writeBackup(
  sourcePath: string,
  file: string,
  nowMs: number,
  options: WriteBackupOptions = {},
): Promise<BackupResult> {
  const target = resolve(file);
  if (!existsSync(sourcePath)) throw new BackupError(`no database at ${sourcePath}`);
  if (existsSync(target)) throw new BackupError(`${target} already exists`);
  await mkdir(dirname(target), { recursive: true });
  const temporary = temporaryNameFor(target);
  const claim = claimTemporary(temporary);
  let readLock: { release: () => void } | undefined;
  try {
    const removedLeftovers = await removeAbandonedTemporaries(dirname(target));
    await removeDatabaseFiles(temporary);
    await vacuumInto(sourcePath, temporary);
    // Tells a backup in another process that this copy is in use (see temporaries.ts).
    readLock = holdReadLock(temporary);
    // SQLite does not fsync a VACUUM INTO copy; a backup must survive a power cut.
    await fsyncPath(temporary);
    const report = await checkDatabaseFile(temporary, nowMs);
    if (report.problems.length > 0) {
      throw new BackupError(
        `the copy failed its checks, no backup written: ${report.problems.slice(0, 5).join("; ")}`,
      );
    }
    await options.beforePlace?.();
    await placeWithoutReplacing(temporary, target);
    await fsyncPath(dirname(target));
    const { size } = await stat(target);
    return {
      file: target,
      bytes: size,
      accounts: report.accounts,
      transactions: report.transactions,
      removedLeftovers,
    };
  } finally {
    readLock?.release();
    await removeDatabaseFiles(temporary);
    claim.release();
  }
}

/** Gives `temporary` the name `target`, failing (rather than replacing) if `target` exists. */
async function placeWithoutReplacing(temporary: string, target: string): Promise<void> {
  try {
    // link() fails with EEXIST where rename() would silently replace a file that appeared
    // since the check above.
    await link(temporary, target);
    await unlink(temporary);
  } catch (err) {
    const code = err && typeof err === "object" && "code" in err ? err.code : undefined;
    if (code === "EEXIST") throw new BackupError(`${target} already exists`);
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw err;
    // A file system without hard links: rename, after the existence check.
    if (existsSync(target)) throw new BackupError(`${target} already exists`);
    await rename(temporary, target);
  }
}
