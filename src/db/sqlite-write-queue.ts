/**
 * SQLite's serial write path with group commit (docs/design.md#group-commit): one writer, never
 * two overlapping transactions. It takes every unit waiting (at most `maxBatch`) into one
 * `BEGIN IMMEDIATE` transaction, runs each inside its own SAVEPOINT so that a unit that throws
 * (402, 409, a bug) rolls back alone, commits once, and only then settles each unit's promise.
 */
import { CompiledQuery, type Transaction } from "kysely";
import type { Database } from "./client.ts";
import type { DB } from "./schema.ts";
import type { BatchStats, Clock, WriteQueue, WriteQueueOptions, WriteUnit } from "./write-path.ts";

interface Job {
  unit: WriteUnit<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const SAVEPOINT = CompiledQuery.raw("SAVEPOINT unit");
const RELEASE = CompiledQuery.raw("RELEASE unit");
const ROLLBACK_TO = CompiledQuery.raw("ROLLBACK TO unit");

const BUSY_RETRY_MS = 10;
const BUSY_RETRY_LIMIT = 500;

/** The SQLite write queue (see the module comment). */
export class SqliteWriteQueue implements WriteQueue {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #maxBatch: number;
  readonly #onBatch: ((stats: BatchStats) => void) | undefined;
  #waiting: Job[] = [];
  #running: Promise<void> | undefined;

  constructor(db: Database, clock: Clock, options: WriteQueueOptions) {
    this.#db = db;
    this.#clock = clock;
    this.#maxBatch = options.maxBatch;
    this.#onBatch = options.onBatch;
  }

  /** Units waiting for a transaction (not counting the batch being committed). */
  get depth(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `unit` in the serial write path.
   * @returns the unit's result, once its transaction has committed.
   * @throws whatever the unit threw (its savepoint rolled back), or the commit's error.
   */
  run<T>(unit: WriteUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ unit, resolve: resolve as (v: unknown) => void, reject });
      this.#running ??= this.#drain();
    });
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
        const batch = this.#waiting.splice(0, this.#maxBatch);
        await this.#runBatch(batch);
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#running = undefined;
    }
  }

  async #runBatch(batch: Job[]): Promise<void> {
    const started = performance.now();
    let outcomes: Outcome[] = [];
    let commitError: unknown;
    for (let attempt = 0; ; attempt++) {
      outcomes = [];
      try {
        await this.#db.beforeWrite?.();
        await this.#db.write.transaction().execute(async (trx) => {
          for (const job of batch) outcomes.push(await this.#runUnit(trx, job));
        });
        commitError = undefined;
        break;
      } catch (err) {
        commitError = err;
        // Another process holds the write lock and nothing of ours ran yet: wait and retry.
        if (outcomes.length === 0 && isBusy(err) && attempt < BUSY_RETRY_LIMIT) {
          await new Promise((r) => setTimeout(r, BUSY_RETRY_MS));
          continue;
        }
        break;
      }
    }
    batch.forEach((job, i) => {
      const outcome = outcomes[i];
      if (commitError !== undefined || !outcome) job.reject(commitError ?? new Error("not run"));
      else if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.error);
    });
    this.#onBatch?.({
      units: batch.length,
      failedUnits: outcomes.filter((o) => !o.ok).length,
      durationMs: performance.now() - started,
      committed: commitError === undefined,
    });
  }

  async #runUnit(trx: Transaction<DB>, job: Job): Promise<Outcome> {
    await trx.executeQuery(SAVEPOINT);
    try {
      const value = await job.unit(trx, this.#clock());
      await trx.executeQuery(RELEASE);
      return { ok: true, value };
    } catch (error) {
      await trx.executeQuery(ROLLBACK_TO);
      await trx.executeQuery(RELEASE);
      return { ok: false, error };
    }
  }
}

function isBusy(err: unknown): boolean {
  const text = `${(err as { code?: unknown })?.code ?? ""} ${(err as Error)?.message ?? ""}`;
  return /SQLITE_BUSY|database is locked/i.test(text);
}
