/**
 * The one write path, with one interface over both engines (see docs/design.md, "Engines").
 *
 * Write endpoints hand a unit of work `(trx, nowMs) => result` to `WriteQueue.run`
 * (src/db/write-path.ts); the write path is the only place that begins and commits write
 * transactions, and a unit's result is never reported before the commit that makes it durable.
 * Services and routes never know which engine runs them. This module picks the engine's:
 *
 * - SQLite (`SqliteWriteQueue`, src/db/sqlite-write-queue.ts): one writer, never two
 *   overlapping transactions. It takes every unit waiting (at most `maxBatch`) into one
 *   `BEGIN IMMEDIATE` transaction, runs each inside its own SAVEPOINT so that a unit that throws
 *   (402, 409, a bug) rolls back alone, commits once (group commit), and only then settles each
 *   unit's promise.
 * - PostgreSQL (`PostgresWritePath`, src/db/pg-write-path.ts): each unit in its own transaction,
 *   many at once across processes; units lock the rows they change, and conflicts are retried.
 *
 * On both, a write the database cannot make (a full disk or database, an I/O error) is a 503
 * `CannotWriteError` carrying the database's own error, recorded in the queue's `health` (which
 * `/ready` reads); see docs/design.md, "When the database cannot write".
 */
import type { Database } from "./client.ts";
import { PostgresWritePath } from "./pg-write-path.ts";
import { SqliteWriteQueue } from "./sqlite-write-queue.ts";
import type { Clock, WriteQueue, WriteQueueOptions } from "./write-path.ts";

/** The write path of `db`'s engine. */
export function createWriteQueue(
  db: Database,
  clock: Clock,
  options: WriteQueueOptions,
): WriteQueue {
  return db.engine === "postgres"
    ? new PostgresWritePath(db, clock, options)
    : new SqliteWriteQueue(db, clock, options);
}
