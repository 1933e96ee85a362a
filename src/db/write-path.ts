/**
 * The write path's shared types (docs/design.md#the-write-path): what services hand to it (a
 * unit of work), what it reports, and the one interface both engines implement, the SQLite
 * write queue (sqlite-write-queue.ts) and PostgreSQL's write path (pg-write-path.ts). Services
 * and routes know only these types; write-queue.ts picks the engine.
 */
import type { Transaction } from "kysely";
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
  /** Resolves when every unit handed in so far has been committed or rejected. */
  idle(): Promise<void>;
  /** Units waiting for (SQLite) or inside (PostgreSQL) a transaction. */
  readonly depth: number;
  /** Whether the database can write, as the last writes found it (`/ready` reads it). */
  readonly health: WriteHealth;
}

export interface WriteQueueOptions {
  /** SQLite: most units committed together (group commit). */
  maxBatch: number;
  onBatch?: (stats: BatchStats) => void;
  /** Told once when the database stops being able to write, and once when it writes again. */
  logger?: HealthLogger;
}
