/**
 * SQLite's serial write path with group commit (docs/design.md#group-commit): one writer, never
 * two overlapping transactions. It takes every unit waiting (at most `maxBatch`) into one
 * `BEGIN IMMEDIATE` transaction, runs each inside its own SAVEPOINT so that a unit that throws
 * (402, 409, a bug) rolls back alone, commits once, and only then settles each unit's promise.
 * A unit handed in to run alone (`RunOptions.alone`: a batch request's many operations) is
 * never grouped with others. A unit alone in its batch runs without a savepoint: it rolls back with its transaction, and
 * two statements fewer matter most on remote libSQL, where each is a round trip.
 * A unit that meets a database that cannot write (src/db/storage-errors.ts) ends its batch:
 * every unit of it gets the 503, nothing of it is kept, and `health` records the failure
 * (docs/design.md, "When the database cannot write"). A batch that finds the database locked
 * by another client (`SQLITE_BUSY`), whether alone or with others, ends there and is run again
 * after BUSY_RETRY_MS: on a file up to BUSY_RETRY_LIMIT times, on a remote server until its
 * write deadline (`Database.writeDeadline`: REMOTE_WRITE_BUDGET_MS after its oldest unit was
 * handed in, which also bounds each attempt's wait for the server's write lock). A batch that finds the database
 * unreachable (remote libSQL), or still locked at the end, ends with a 503, and so does every
 * unit that waited behind it, at once rather than each after its own wait; `health` records it
 * until a write commits again (docs/design.md, "Remote libSQL").
 */
import { CompiledQuery, type Transaction } from "kysely";
import { ApiError } from "../errors.ts";
import type { Database } from "./client.ts";
import { unavailableError } from "./postgres.ts";
import type { DB } from "./schema.ts";
import { SeenLimits } from "./seen-limits.ts";
import { asCannotWrite, isStorageFailure } from "./storage-errors.ts";
import { WriteHealth } from "./write-health.ts";
import type {
  BatchStats,
  Clock,
  RunOptions,
  TwoPathWrite,
  WriteQueue,
  WriteQueueOptions,
  WriteUnit,
} from "./write-path.ts";
import { probeWrite } from "./write-probe.ts";

interface Job {
  unit: WriteUnit<unknown>;
  /** Runs in a transaction of its own (`RunOptions.alone`). */
  alone: boolean;
  /** When it was handed in, `performance.now()` time. */
  queuedMs: number;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Thrown out of a lone unit's transaction so that it rolls back; the unit's own error is kept. */
class UnitRefused extends Error {}

const SAVEPOINT = CompiledQuery.raw("SAVEPOINT unit");
const RELEASE = CompiledQuery.raw("RELEASE unit");
const ROLLBACK_TO = CompiledQuery.raw("ROLLBACK TO unit");

const BUSY_RETRY_MS = 10;
const BUSY_RETRY_LIMIT = 500;
/** Remote: the least time a batch's first attempt is given, however long its units waited. */
const MIN_ATTEMPT_MS = 1000;

/** The SQLite write queue (see the module comment). */
export class SqliteWriteQueue implements WriteQueue {
  readonly #db: Database;
  readonly #clock: Clock;
  /** This write path's guesses of accounts' limits, for the plain paths (seen-limits.ts). */
  readonly #seen = new SeenLimits();
  readonly #maxBatch: number;
  readonly #onBatch: ((stats: BatchStats) => void) | undefined;
  readonly health: WriteHealth;
  #waiting: Job[] = [];
  #running: Promise<void> | undefined;

  constructor(db: Database, clock: Clock, options: WriteQueueOptions) {
    this.#db = db;
    this.#clock = clock;
    this.#maxBatch = options.maxBatch;
    this.#onBatch = options.onBatch;
    this.health = new WriteHealth(() => this.run(probeWrite("sqlite")), options.logger);
  }

  /** Units waiting for a transaction (not counting the batch being committed). */
  get depth(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `unit` in the serial write path.
   * @returns the unit's result, once its transaction has committed.
   * @throws whatever the unit threw (its savepoint rolled back), the commit's error, or
   *   `CannotWriteError` (503) when the database cannot write: then no unit of the batch is kept.
   */
  run<T>(unit: WriteUnit<T>, options: RunOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({
        unit,
        alone: options.alone === true,
        queuedMs: performance.now(),
        resolve: resolve as (v: unknown) => void,
        reject,
      });
      this.#running ??= this.#drain();
    });
  }

  /** The plain path and, when it made nothing, the general one, in one unit of a batch. */
  runWrite<T>(write: TwoPathWrite<T>): Promise<T> {
    return this.run(this.unitOf(write));
  }

  unitOf<T>(write: TwoPathWrite<T>): WriteUnit<T> {
    const { plain } = write;
    return async (trx, nowMs) =>
      (plain ? await plain.sqlite(trx, nowMs, this.#seen) : null) ?? write.general(trx, nowMs);
  }

  /**
   * How many of the waiting units the next transaction takes: at most `maxBatch`, in order, up
   * to the first unit that runs alone (`RunOptions.alone`), which is taken by itself.
   */
  #nextBatchSize(): number {
    const limit = Math.min(this.#maxBatch, this.#waiting.length);
    for (let i = 0; i < limit; i++) {
      if (this.#waiting[i]?.alone) return Math.max(i, 1);
    }
    return limit;
  }

  /** Resolves when every unit handed in so far has been committed or rejected. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #drain(): Promise<void> {
    try {
      // Yield one turn of the event loop before each batch: the synchronous driver runs a whole
      // batch without giving the loop a chance to read requests, so without this pause every
      // batch would hold a single unit. Requests read in this turn join the next batch.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, this.#nextBatchSize());
        await this.#runBatch(batch);
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#running = undefined;
    }
  }

  async #runBatch(batch: Job[]): Promise<void> {
    const started = performance.now();
    const deadlineMs = this.#deadlineOf(batch, started);
    let outcomes: Outcome[] = [];
    let batchError: unknown;
    for (let attempt = 0; ; attempt++) {
      outcomes = [];
      try {
        this.#db.writeDeadline?.set(deadlineMs);
        await this.#db.beforeWrite?.();
        await this.#inTransaction(async (trx) => {
          const [alone] = batch;
          if (batch.length === 1 && alone) {
            const outcome = await this.#runAlone(trx, alone);
            outcomes.push(outcome);
            if (!outcome.ok) throw new UnitRefused();
          } else {
            for (const job of batch) outcomes.push(await this.#runUnit(trx, job));
          }
        });
        batchError = undefined;
        break;
      } catch (err) {
        batchError = err instanceof UnitRefused ? undefined : err;
        if (batchError === undefined) break;
        // Another client holds the write lock and nothing of ours ran yet: wait and retry.
        const mayRetry =
          deadlineMs === undefined
            ? attempt < BUSY_RETRY_LIMIT
            : performance.now() + BUSY_RETRY_MS < deadlineMs;
        if (outcomes.length === 0 && isBusy(err) && mayRetry) {
          await new Promise((r) => setTimeout(r, BUSY_RETRY_MS));
          continue;
        }
        break;
      }
    }
    this.#db.writeDeadline?.set(undefined);
    if (batchError !== undefined) {
      // Nothing of the batch was kept: every unit gets the batch's error, a 503 when the
      // database cannot write, is unreachable, or stays locked by another process.
      if (isStorageFailure(batchError)) this.health.recordFailure(batchError);
      else if (isBusy(batchError) || isUnreachable(batchError)) {
        this.health.recordUnavailable(causeOf(batchError));
      }
      const error = isBusy(batchError) ? unavailableError(batchError) : asCannotWrite(batchError);
      for (const job of batch) job.reject(error);
      // The units that queued behind an unreachable database would each wait out the same
      // timeout in turn: they get the 503 now, and the next unit tries again.
      if (
        error instanceof ApiError &&
        error.code === "SERVICE_UNAVAILABLE" &&
        !isStorageFailure(batchError)
      ) {
        for (const job of this.#waiting.splice(0)) job.reject(error);
      }
    } else {
      this.health.recordCommit();
      batch.forEach((job, i) => {
        const outcome = outcomes[i];
        if (!outcome) job.reject(new Error("not run"));
        else if (outcome.ok) job.resolve(outcome.value);
        else job.reject(outcome.error);
      });
    }
    this.#onBatch?.({
      units: batch.length,
      failedUnits: outcomes.filter((o) => !o.ok).length,
      durationMs: performance.now() - started,
      committed: batchError === undefined,
    });
  }

  /**
   * Remote: when the calls of `batch`'s transaction give up (`performance.now()` time): the
   * write budget after its oldest unit was handed in, but at least MIN_ATTEMPT_MS from `now`.
   * A file: undefined (SQLite's busy_timeout and BUSY_RETRY_LIMIT bound the waits).
   */
  #deadlineOf(batch: Job[], now: number): number | undefined {
    const budget = this.#db.writeDeadline?.budgetMs;
    if (budget === undefined) return undefined;
    const oldest = Math.min(...batch.map((job) => job.queuedMs));
    return Math.max(oldest + budget, now + MIN_ATTEMPT_MS);
  }

  /**
   * Runs `work` in one write transaction and commits it; rolls back when it throws.
   * @throws the error of `work` or of the commit, never the rollback's: after some errors
   *   (SQLITE_FULL, an I/O error) SQLite has already rolled the transaction back, and ROLLBACK
   *   then fails with "no transaction is active", which would hide the error that matters.
   */
  async #inTransaction(work: (trx: Transaction<DB>) => Promise<void>): Promise<void> {
    const trx = await this.#db.write.startTransaction().execute();
    try {
      await work(trx);
      await trx.commit().execute();
    } catch (err) {
      const rollback = trx
        .rollback()
        .execute()
        .catch(() => undefined);
      // An unreachable database (remote libSQL) would make the caller wait out the rollback's
      // own timeout too: it is left to finish, or to fail, on its own (over HTTP it goes out on
      // the transaction's stream once the server answers the call given up, which ends the
      // transaction there; src/db/remote-libsql.ts).
      if (!isUnreachable(err)) await rollback;
      throw err;
    }
  }

  /**
   * Runs the one unit of a batch without a savepoint.
   * @returns its outcome; when it is a refusal the caller rolls the transaction back
   * @throws (ending the batch) the unit's error when the database cannot write or be reached
   */
  async #runAlone(trx: Transaction<DB>, job: Job): Promise<Outcome> {
    try {
      return { ok: true, value: await job.unit(trx, this.#clock()) };
    } catch (error) {
      if (endsBatch(error)) throw error;
      return { ok: false, error };
    }
  }

  /**
   * Runs one unit inside its own savepoint.
   * @returns its outcome; a unit that threw has had its savepoint rolled back
   * @throws (ending the batch) the unit's error when the database cannot write, since SQLite
   *   may have rolled the whole transaction back, or cannot be reached; or an Error when its
   *   savepoint could not be rolled back (the transaction is gone)
   */
  async #runUnit(trx: Transaction<DB>, job: Job): Promise<Outcome> {
    await trx.executeQuery(SAVEPOINT);
    try {
      const value = await job.unit(trx, this.#clock());
      await trx.executeQuery(RELEASE);
      return { ok: true, value };
    } catch (error) {
      if (endsBatch(error)) throw error;
      try {
        await trx.executeQuery(ROLLBACK_TO);
        await trx.executeQuery(RELEASE);
      } catch (rollbackError) {
        throw new Error(`the write transaction was lost after a unit failed: ${String(error)}`, {
          cause: rollbackError,
        });
      }
      return { ok: false, error };
    }
  }
}

/**
 * True for an error after which the batch's transaction cannot go on: the database cannot
 * write, cannot be reached, or is locked by another client (a `BEGIN IMMEDIATE` that failed,
 * which over remote libSQL comes back with the first unit's first statement).
 */
function endsBatch(err: unknown): boolean {
  return isStorageFailure(err) || isUnreachable(err) || isBusy(err);
}

/** The database's own error behind a 503 of the write path, for the log. */
function causeOf(err: unknown): unknown {
  return err instanceof ApiError && err.cause !== undefined ? err.cause : err;
}

/** True for the 503 of a database that cannot be reached (remote libSQL's guarded calls). */
function isUnreachable(err: unknown): boolean {
  return err instanceof ApiError && err.code === "SERVICE_UNAVAILABLE" && !isStorageFailure(err);
}

function isBusy(err: unknown): boolean {
  const text = `${(err as { code?: unknown })?.code ?? ""} ${(err as Error)?.message ?? ""}`;
  return /SQLITE_BUSY|database is locked/i.test(text);
}
