/**
 * The write path's shared types (docs/design.md#the-write-path): what services hand to it (a
 * unit of work), what it reports, and the one interface both engines implement, the SQLite
 * write queue (sqlite-write-queue.ts) and PostgreSQL's write path (pg-write-path.ts). Services
 * and routes know only these types; write-queue.ts picks the engine.
 */
import type { Kysely, Transaction } from "kysely";
import type { DB } from "./schema.ts";
import type { SeenLimits } from "./seen-limits.ts";
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
 * The plain form of a write (docs/design.md#plain-writes), one per engine: each makes the write
 * whole when it is plain and answers its result, or changes nothing and answers null (the write
 * is not plain). Only the write path picks and runs one (`WriteQueue.runWrite`, `unitOf`).
 */
export interface PlainWrite<T> {
  /**
   * SQLite: a few statements inside the unit (the one writer runs nothing between them).
   * `seen`: the write path's guesses of accounts' limits (seen-limits.ts).
   */
  sqlite: (trx: Transaction<DB>, nowMs: number, seen: SeenLimits) => Promise<T | null>;
  /**
   * PostgreSQL: one function call that locks what it changes and decides under the lock; it
   * commits by itself when `db` is not a transaction.
   */
  postgres: (db: Kysely<DB>, nowMs: number, seen: SeenLimits) => Promise<T | null>;
  /**
   * For a write whose plain form is one call of PostgreSQL's `ledger_plain_debit` (a deduction,
   * a manual debit): that call's arguments and how its answer row becomes the result (null: not
   * plain, nothing changed). A batch makes a run of such calls together on either engine
   * (src/batch/plain-debits.ts; SQLite from the same arguments, src/ledger/plain-run.ts);
   * `postgres` makes the same call.
   */
  debitCall?: ((nowMs: number) => PlainDebitCall<T>) | undefined;
}

/** One call of PostgreSQL's `ledger_plain_debit` without a hold (sql/postgres/functions/ledger_plain_debit.sql). */
export interface PlainDebitCall<T> {
  args: {
    projectId: string;
    ref: string;
    byId: boolean;
    amountMicros: number;
    txnId: string;
    description: string;
    metadata: string;
    source: string;
  };
  /** The result from the function's answer row: null when its outcome is not `applied`. */
  done: (row: PlainDebitRow) => T | null;
}

/** What `ledger_plain_debit` answers (and `ledger_plain_confirm`). */
export type PlainDebitRow = {
  /** `tree`: not plain, the account is in a tree (its plain debit: ledger_plain_member_debit). */
  outcome: "applied" | "other" | "tree";
  account_id: string;
  external_id: string;
  balance_after_micros: number;
  created_at_ms: number;
  seq: number;
  /**
   * The single debit's functions: the limits text stored for the account they found (null: none),
   * so that a caller whose guess of them was wrong tries again for these (seen-limits.ts).
   */
  stored_limits?: string | null;
};

/**
 * A write with two paths: `general` makes it in every case (and answers its errors); `plain`,
 * when given, makes it in fewer statements when the write is plain.
 */
export interface TwoPathWrite<T> {
  plain?: PlainWrite<T> | undefined;
  general: WriteUnit<T>;
}

/** `write` answering `map(result)` instead of its result, on both engines. */
export function mapPlain<T, U>(write: PlainWrite<T>, map: (result: T) => U): PlainWrite<U> {
  const then = (result: T | null) => (result === null ? null : map(result));
  const { debitCall } = write;
  return {
    sqlite: async (trx, nowMs, seen) => then(await write.sqlite(trx, nowMs, seen)),
    postgres: async (db, nowMs, seen) => then(await write.postgres(db, nowMs, seen)),
    debitCall:
      debitCall &&
      ((nowMs) => {
        const call = debitCall(nowMs);
        return { args: call.args, done: (row) => then(call.done(row)) };
      }),
  };
}

/** How `WriteQueue.run` runs a unit. */
export interface RunOptions {
  /**
   * SQLite: the unit is large (a batch of many operations, src/batch/run.ts) and runs in a
   * transaction of its own, without a savepoint, instead of joining the next group commit:
   * SQLite's statements cost about twice as much inside a savepoint that many statements
   * follow (docs/design.md#batches). PostgreSQL runs every unit in its own transaction anyway.
   */
  alone?: boolean;
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
  run<T>(unit: WriteUnit<T>, options?: RunOptions): Promise<T>;
  /**
   * Runs `write`, its plain path first when it has one and then, only when that made nothing,
   * its general unit: the one place where each engine asks whether a write is plain. SQLite:
   * both in one unit of the next batch. PostgreSQL: the plain path committed by itself (one
   * round trip for a debit, no BEGIN or COMMIT), then the general unit in a transaction.
   * @throws as `run`
   */
  runWrite<T>(write: TwoPathWrite<T>): Promise<T>;
  /**
   * `write` as one unit, for a caller that runs it inside a transaction of its own (a request
   * with an Idempotency-Key): its plain path on the unit's transaction, then, only when that
   * made nothing, its general unit.
   */
  unitOf<T>(write: TwoPathWrite<T>): WriteUnit<T>;
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
