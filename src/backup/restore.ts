/**
 * `ledger restore FILE`, with the service stopped: checks the backup, then puts a checked copy of
 * it in place of the database file, keeping the previous database beside it, complete, as
 * `<name>.before-restore-<UTC timestamp>`. When there is no database file yet (a new machine),
 * it creates the file, and the folders leading to it, only when the restore succeeds, and keeps
 * no `.before-restore-` copy (contract section 22). It refuses, changing nothing, while any
 * process has the database open or when the backup fails its checks. It never changes FILE or the files
 * beside it: SQLite never opens FILE; it opens a private copy of FILE and of the rollback
 * journal or WAL beside it, and applies them to the copy only (see docs/operations.md, "Backups
 * and restore").
 */
import { constants, existsSync } from "node:fs";
import { copyFile, link, mkdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import {
  BackupError,
  checkDatabaseFile,
  fsyncPath,
  lockExclusively,
  removeDatabaseFiles,
  utcStamp,
  vacuumInto,
} from "./sqlite-file.ts";
import { claimTemporary, temporaryNameFor } from "./temporaries.ts";

export interface RestoreResult {
  /** The database file now holding the backup's content. */
  database: string;
  /** Where the previous database was kept; null when there was none. */
  previous: string | null;
  /** Whether the database file did not exist before (it was created by this restore). */
  created: boolean;
  accounts: number;
  transactions: number;
}

/**
 * Restores `backupFile` into the database file `databasePath`.
 * @param databasePath the database file; it and its folders are created when missing
 * @param nowMs the time of the checks and of the `.before-restore-` name
 * @throws BackupError when the database is in use, the backup is missing or fails its checks,
 *   or the previous database cannot be set aside; nothing was changed then (no folder made
 *   for a missing database is left behind either)
 */
export async function restoreBackup(
  databasePath: string,
  backupFile: string,
  nowMs: number,
): Promise<RestoreResult> {
  const target = resolve(databasePath);
  const source = resolve(backupFile);
  if (!existsSync(source)) throw new BackupError(`no backup at ${source}`);
  if (source === target) throw new BackupError("the backup is the database itself");
  if (!existsSync(target) && existsSync(`${target}-wal`)) {
    // A WAL without its database would be replayed into the restored file.
    throw new BackupError(`${target}-wal exists without ${target}: move it away first`);
  }
  // The checks run on temporary files beside the target, so that the final rename stays in one
  // folder; folders made for them are removed again when the restore fails.
  const madeFolder = await mkdir(dirname(target), { recursive: true });
  try {
    return await restoreInto(target, source, nowMs);
  } catch (err) {
    if (madeFolder !== undefined) await removeEmptyFolders(dirname(target), madeFolder);
    throw err;
  }
}

/** `restoreBackup` once the target's folder exists: the checks, then the swap. */
async function restoreInto(target: string, source: string, nowMs: number): Promise<RestoreResult> {
  // Held from before the checks until the new file is in place, so no service can start on the
  // old database meanwhile.
  const lock = existsSync(target) ? lockExclusively(target) : null;
  const copy = temporaryNameFor(`${target}-restore-source`);
  const temporary = temporaryNameFor(`${target}-restore`);
  const claims = [claimTemporary(copy), claimTemporary(temporary)];
  try {
    await copyBackup(source, copy);
    // The copy gets the checks that do not depend on its schema version; the invariants are
    // checked on the migrated copy below.
    const original = await checkDatabaseFile(copy, nowMs, { invariants: false });
    if (original.problems.length > 0) throw failedChecks(original.problems);
    // A compact copy of it, migrated to this version's schema and checked again, is what goes
    // in place.
    await removeDatabaseFiles(temporary);
    await vacuumInto(copy, temporary);
    const report = await checkDatabaseFile(temporary, nowMs, { migrate: true });
    if (report.problems.length > 0) throw failedChecks(report.problems);
    await fsyncPath(temporary);
    let previous: string | null = null;
    if (lock) {
      previous = `${target}.before-restore-${utcStamp(nowMs)}`;
      await setAside(lock, target, previous);
    } else if (existsSync(target)) {
      // Something (a service starting, `ledger migrate`) created the database meanwhile: it is
      // not ours to replace unchecked.
      throw new BackupError(`${target} was created while restoring; nothing was changed`);
    }
    try {
      await rename(temporary, target);
    } catch (err) {
      if (previous) await unlink(previous);
      throw err;
    }
    await fsyncPath(dirname(target));
    return {
      database: target,
      previous,
      created: lock === null,
      accounts: report.accounts,
      transactions: report.transactions,
    };
  } finally {
    lock?.close();
    await removeDatabaseFiles(copy);
    await removeDatabaseFiles(temporary);
    for (const claim of claims) claim.release();
  }
}

/**
 * Removes `folder` and its parents up to and including `top` (the first folder `mkdir` made),
 * each only when empty: what a failed restore made for a missing database, and nothing more.
 */
async function removeEmptyFolders(folder: string, top: string): Promise<void> {
  for (let at = folder; ; at = dirname(at)) {
    try {
      await rmdir(at);
    } catch {
      return;
    }
    if (at === resolve(top) || dirname(at) === at) return;
  }
}

/**
 * Copies the backup `source`, and the rollback journal or WAL beside it when there is one, to
 * the new files `copy`, `copy-journal`, `copy-wal`: opening the copy then rolls back an
 * unfinished transaction, or replays committed frames, in the copy, as opening `source` would
 * have done in `source` (its shared-memory index is not needed: SQLite rebuilds it).
 */
async function copyBackup(source: string, copy: string): Promise<void> {
  await removeDatabaseFiles(copy);
  await copyFile(source, copy, constants.COPYFILE_EXCL);
  for (const suffix of ["-journal", "-wal"]) {
    if (existsSync(`${source}${suffix}`)) {
      await copyFile(`${source}${suffix}`, `${copy}${suffix}`, constants.COPYFILE_EXCL);
    }
  }
}

function failedChecks(problems: string[]): BackupError {
  return new BackupError(
    `the backup failed its checks, nothing was changed: ${problems.slice(0, 5).join("; ")}`,
  );
}

/**
 * Makes the locked database at `target` complete in its main file (its WAL folded in and
 * removed), then gives that file the second name `previous`.
 */
async function setAside(
  lock: ReturnType<typeof lockExclusively>,
  target: string,
  previous: string,
): Promise<void> {
  if (existsSync(previous)) throw new BackupError(`${previous} already exists`);
  // Leaving WAL mode checkpoints every frame of the WAL into the main file and deletes the WAL;
  // SQLite allows it only to the connection holding the exclusive lock.
  lock.exec("PRAGMA journal_mode = DELETE");
  if (await walHasFrames(target)) {
    throw new BackupError(`could not fold ${target}-wal into the database; nothing was changed`);
  }
  // The old WAL index describes a file that is about to be replaced: the new database must not
  // find it.
  await rm(`${target}-shm`, { force: true });
  try {
    await link(target, previous);
  } catch {
    // A file system without hard links: a copy of the complete, locked file does as well.
    await copyFile(target, previous, constants.COPYFILE_EXCL);
  }
  await fsyncPath(previous);
}

/** Whether `target`'s WAL holds any frame (a WAL is a 32-byte header, then frames). */
async function walHasFrames(target: string): Promise<boolean> {
  const wal = `${target}-wal`;
  return existsSync(wal) && (await stat(wal)).size > 32;
}
