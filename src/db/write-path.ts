/**
 * The write path's shared types (docs/design.md#the-write-path): what services hand to it (a
 * unit of work), what it reports, and the one interface both engines implement, the SQLite
 * write queue (sqlite-write-queue.ts) and PostgreSQL's write path (pg-write-path.ts). Services
 * and routes know only these types; write-queue.ts picks the engine.
 */
import type { CompiledQuery, Kysely, Transaction } from "kysely";
import type { DB } from "./schema.ts";
import type { HealthLogger, WriteHealth } from "./write-health.ts";

/** A unit of work: runs inside the queue's transaction; `nowMs` is the clock at its start. */
export type WriteUnit<T> = (trx: Transaction<DB>, nowMs: number) => Promise<T>;

/** The time source, in Unix epoch milliseconds; tests pass a fake one. */
export type Clock = () => number;

/** What the write path reports after each transaction (for metrics). */
export interface BatchStats {
  units: number;
  failedUnits: number;
  durationMs: number;
  committed: boolean;
}

/**
 * A write that one statement makes whole (a plain write, docs/design.md#plain-writes), built by
 * `oneStatement`: it runs its statement once and reads what it answered.
 */
export interface StatementWrite<T> {
  /** @returns the write's result, or null when the statement made nothing (not plain) */
  execute(db: Kysely<DB>, nowMs: number): Promise<T | null>;
}

/**
 * The write of `statement` (compiled for `db`'s engine at `nowMs`), whose rows `result` reads.
 */
export function oneStatement<T, R>(
  statement: (db: Kysely<DB>, nowMs: number) => CompiledQuery<R>,
  result: (rows: R[]) => T | null,
): StatementWrite<T> {
  return {
    execute: async (db, nowMs) => result((await db.executeQuery(statement(db, nowMs))).rows),
  };
}

/** `write` answering `map(result)` instead of its result. */
export function mapStatement<T, U>(
  write: StatementWrite<T>,
  map: (result: T) => U,
): StatementWrite<U> {
  return {
    execute: async (db, nowMs) => {
      const result = await write.execute(db, nowMs);
      return result === null ? null : map(result);
    },
  };
}

/** The write path services and routes use, whatever the engine. */
export interface WriteQueue {
  /**
   * Runs `unit` in a write transaction.
   * @returns the unit's result, once its transaction has committed
   * @throws whatever the unit threw (nothing it did is kept), the commit's error, or
   *   ApiError SERVICE_UNAVAILABLE: `CannotWriteError` when the database cannot write (full,
   *   or an I/O error; nothing of the unit is kept); on PostgreSQL also when the database is
   *   unreachable, or conflicts outlasted the retries (nothing was applied, unless the commit's
   *   outcome is unknown)
   */
  run<T>(unit: WriteUnit<T>): Promise<T>;
  /**
   * Runs `write` as a transaction of its own where one statement commits without a BEGIN and a
   * COMMIT around it (PostgreSQL: one round trip), retried on conflicts as a unit is. SQLite's
   * queue, which batches units anyway, has no such path and answers null at once.
   * @returns the write's result; null when it made nothing or the engine has no such path
   *   (then the caller runs its unit)
   * @throws as `run`
   */
  runStatement<T>(write: StatementWrite<T>): Promise<T | null>;
  /**
   * Whether `runStatement` can run a write by itself (PostgreSQL); when false (SQLite) a caller
   * need not build the write at all.
   */
  readonly runsStatements: boolean;
  /** Resolves when every unit handed in so far has been committed or rejected. */
  idle(): Promise<void>;
  /** Units waiting for (SQLite) or inside (PostgreSQL) a transaction. */
  readonly depth: number;
  /** Whether the database can write, as the last writes found it (`/ready` reads it). */
  readonly health: WriteHealth;
}

/**
 * What the scheduled jobs use of the write path: units, and whether a failure to write is going
 * on (`health.failure.sinceMs`, epoch ms, names one episode). A `WriteQueue` is one.
 */
export interface UnitRunner {
  run: WriteQueue["run"];
  readonly health: { readonly failure: { readonly sinceMs: number } | undefined };
}

export interface WriteQueueOptions {
  /** SQLite: most units committed together (group commit). */
  maxBatch: number;
  onBatch?: (stats: BatchStats) => void;
  /** Told once when the database stops being able to write, and once when it writes again. */
  logger?: HealthLogger;
}
