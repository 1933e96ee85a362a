/**
 * Folding the WAL into the database file at a clean stop (docs/operations.md, "Stopping"): a
 * WAL database keeps recent writes in `<name>-wal` beside `<name>` until a checkpoint copies
 * them back, so a person who copies the `.db` file alone after a stop must find every write in
 * it. SQLite's `PRAGMA wal_checkpoint(TRUNCATE)` copies every frame into the database file and
 * empties the WAL; it needs no reader holding an older snapshot and no open write transaction,
 * so it runs once requests, jobs and queued writes are done (https://sqlite.org/pragma.html#pragma_wal_checkpoint).
 */
import { type Kysely, sql } from "kysely";
import type { DB } from "./schema.ts";

/** What a checkpoint achieved. */
export interface WalCheckpoint {
  /** The database file (absolute path). */
  file: string;
  /** True when the database file alone holds every committed write (the WAL is empty). */
  complete: boolean;
  /** Why it is not complete, when the statement failed rather than found the WAL busy. */
  error?: string;
}

/**
 * Runs `PRAGMA wal_checkpoint(TRUNCATE)` on `db` (a connection to the embedded file `file`).
 * SQLite answers one row `(busy, log, checkpointed)`: `busy` is 1 when another connection's read
 * or write kept it from finishing (after the connection's busy timeout), and then the WAL still
 * holds frames the file lacks.
 * @returns `complete: false` when SQLite reported busy, or with `error` when the statement
 *   failed (a write transaction still open on the connection, a broken connection): a stop
 *   reports it and goes on closing, it never throws
 */
export async function checkpointWal(db: Kysely<DB>, file: string): Promise<WalCheckpoint> {
  try {
    const { rows } = await sql<{
      busy: number | bigint;
    }>`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
    const busy = rows[0]?.busy;
    return { file, complete: busy !== undefined && Number(busy) === 0 };
  } catch (err) {
    return { file, complete: false, error: err instanceof Error ? err.message : String(err) };
  }
}
