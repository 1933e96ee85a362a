/**
 * The temporary files of backups (and restores) in progress, and the removal of those a killed
 * process left behind (docs/operations.md, "Backups and restore").
 *
 * A temporary is named `.<final name>.<origin>.<pid>.tmp`, beside its destination, where
 * `<origin>` is 8 hex digits standing for the host name of the machine (or container) that
 * writes it; SQLite may add `-journal`, `-wal` or `-shm` to it. While a backup writes its copy,
 * SQLite holds a lock on it, and from then until the copy has its name the backup holds a read
 * lock on it (`holdReadLock`). Before writing, each backup removes from its folder the
 * temporaries whose backup is over, that is, on which no process holds a lock, and:
 *
 * - of this origin, when no process with their id runs (or the id is this process's own and it
 *   is not writing that file: a process id is reused after a restart);
 * - of another origin (a machine or container, perhaps since recreated, whose processes cannot
 *   be seen from here), once unchanged for STALE_MS (an hour);
 * - named as earlier versions named them (`.<final name>.<pid>.tmp`), when no process with their
 *   id runs and what is there was written by SQLite: a database, or a copy killed before its
 *   header was written, with a rollback journal beside it.
 *
 * No other file is touched.
 */
import { createHash } from "node:crypto";
import { open, readdir, stat } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { isLocked, removeDatabaseFiles } from "./sqlite-file.ts";

/** Milliseconds after which an unchanged, unlocked temporary of another origin is abandoned. */
export const STALE_MS = 60 * 60 * 1000;

const CURRENT = /^\.(.+)\.([0-9a-f]{8})\.(\d+)\.tmp(?:-journal|-wal|-shm)?$/;
const LEGACY = /^\.(.+)\.(\d+)\.tmp(?:-journal|-wal|-shm)?$/;
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");
/** The first bytes of a SQLite rollback journal. */
const JOURNAL_HEADER = Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);

/** The temporaries this process is writing now (absolute paths without SQLite's suffixes). */
const inProgress = new Set<string>();

let originTag: string | undefined;

/** This machine (or container), as 8 hex digits of a hash of its host name. */
export function origin(): string {
  originTag ??= createHash("sha256").update(hostname()).digest("hex").slice(0, 8);
  return originTag;
}

/** The temporary name of a file on its way to `file`: hidden, beside it, unique per process. */
export function temporaryNameFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.${origin()}.${process.pid}.tmp`);
}

/**
 * Marks `temporary` as being written by this process until `release()`, so that a cleanup in
 * this process leaves it alone.
 */
export function claimTemporary(temporary: string): { release: () => void } {
  inProgress.add(temporary);
  return { release: () => inProgress.delete(temporary) };
}

function processIsAlive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return !(err && typeof err === "object" && "code" in err && err.code === "ESRCH");
  }
}

/** Whether the file at `path` begins with `magic`. */
async function beginsWith(path: string, magic: Buffer): Promise<boolean> {
  try {
    const handle = await open(path, "r");
    try {
      const head = Buffer.alloc(magic.length);
      const { bytesRead } = await handle.read(head, 0, head.length, 0);
      return bytesRead === magic.length && head.equals(magic);
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
}

/**
 * Whether the temporary `baseName` in `dir`, with the files `group` (it and what SQLite left
 * beside it), is abandoned (see the module comment).
 */
async function isAbandoned(
  dir: string,
  baseName: string,
  group: string[],
  nowMs: number,
): Promise<boolean> {
  const base = join(dir, baseName);
  if (inProgress.has(base)) return false;
  const stats = await Promise.all(group.map((name) => stat(join(dir, name)).catch(() => null)));
  if (stats.some((info) => info !== null && !info.isFile())) return false;
  const newestMs = Math.max(0, ...stats.map((info) => info?.mtimeMs ?? 0));
  const current = CURRENT.exec(baseName);
  let over: boolean;
  if (current) {
    over =
      current[2] === origin() ? !processIsAlive(Number(current[3])) : nowMs - newestMs >= STALE_MS;
  } else {
    const legacy = LEGACY.exec(baseName);
    // An earlier version's name: only what SQLite wrote, a database or the journal of one being
    // written (a copy killed mid-way has no header yet, but its journal has one).
    over =
      legacy !== null &&
      !processIsAlive(Number(legacy[2])) &&
      ((await beginsWith(base, SQLITE_HEADER)) ||
        (await beginsWith(`${base}-journal`, JOURNAL_HEADER)));
  }
  // Whatever the names say, a copy that a process holds a lock on is in use.
  return over && !isLocked(base);
}

/**
 * Removes the abandoned temporaries of backups in `dir` (see the module comment).
 * @returns the names removed (main files and SQLite's files beside them), sorted
 */
export async function removeAbandonedTemporaries(
  dir: string,
  nowMs = Date.now(),
): Promise<string[]> {
  const names = await readdir(dir).catch(() => []);
  const groups = new Map<string, string[]>();
  for (const name of names) {
    if (!CURRENT.test(name) && !LEGACY.test(name)) continue;
    const baseName = name.replace(/-(journal|wal|shm)$/, "");
    groups.set(baseName, [...(groups.get(baseName) ?? []), name]);
  }
  const removed: string[] = [];
  for (const [baseName, group] of groups) {
    if (!(await isAbandoned(dir, baseName, group, nowMs))) continue;
    await removeDatabaseFiles(join(dir, baseName));
    removed.push(...group);
  }
  return removed.sort();
}
