/**
 * PostgreSQL's write path (see docs/design.md, "Engines: SQLite and PostgreSQL").
 *
 * Each unit runs in its own READ COMMITTED transaction; several run at once, in this process and
 * in others. A unit locks what it changes before it reads what it decides on (the account row
 * `FOR UPDATE` before its holds are summed, a reservation `FOR UPDATE` before it is settled; see
 * `locksRows`), so two units on one account take turns while units on different accounts run
 * side by side. Under READ COMMITTED each statement after a lock sees every commit made before
 * the lock was granted.
 *
 * A conflict between transactions (serialization failure 40001, deadlock 40P01, lock timeout
 * 55P03, or a unique violation a concurrent unit caused, see `isRetryableConflict`) rolls the
 * whole unit back, and the unit runs again in a new transaction with a new `nowMs`, after a short
 * random pause, at most MAX_ATTEMPTS times and within RETRY_BUDGET_MS. When those run out the
 * caller gets 503 SERVICE_UNAVAILABLE and nothing was applied; a conflict is never a 500. A
 * database that cannot be reached is a 503 at once (not retried: a commit whose answer was lost
 * may have been applied, and only the caller's Idempotency-Key makes repeating it safe). A write
 * the database cannot make for lack of space or an I/O error (SQLSTATE class 53, 58030) is a
 * 503 `CannotWriteError` at once, recorded in `health` (docs/design.md, "When the database
 * cannot write").
 */
import { ApiError } from "../errors.ts";
import type { Database } from "./client.ts";
import { isRetryableConflict, isUnavailable, unavailableError } from "./postgres.ts";
import { SeenLimits } from "./seen-limits.ts";
import { asCannotWrite, isStorageFailure } from "./storage-errors.ts";
import { WriteHealth } from "./write-health.ts";
import type {
  Clock,
  TwoPathWrite,
  WriteQueue,
  WriteQueueOptions,
  WriteUnit,
} from "./write-path.ts";
import { probeWrite } from "./write-probe.ts";

/** Most transactions one unit runs in before the caller gets a 503. */
export const MAX_ATTEMPTS = 12;
/** Milliseconds after which a unit that keeps conflicting is not tried again. */
export const RETRY_BUDGET_MS = 4000;
/** The first pause before a retry, in ms; each retry doubles it (with jitter), up to 200 ms. */
const FIRST_PAUSE_MS = 2;
const MAX_PAUSE_MS = 200;

export class PostgresWritePath implements WriteQueue {
  readonly #db: Database;
  readonly #clock: Clock;
  /** This write path's guesses of accounts' limits, for the plain paths (seen-limits.ts). */
  readonly #seen = new SeenLimits();
  readonly #onBatch: WriteQueueOptions["onBatch"];
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly health: WriteHealth;

  constructor(db: Database, clock: Clock, options: WriteQueueOptions) {
    this.#db = db;
    this.#clock = clock;
    this.#onBatch = options.onBatch;
    this.health = new WriteHealth(() => this.run(probeWrite("postgres")), options.logger);
  }

  get depth(): number {
    return this.#inFlight.size;
  }

  run<T>(unit: WriteUnit<T>): Promise<T> {
    return this.#track(
      this.#withRetries((report) =>
        this.#db.write.transaction().execute(async (trx) => {
          try {
            return await unit(trx, this.#clock());
          } catch (err) {
            report.unitThrew = true;
            throw err;
          }
        }),
      ),
    );
  }

  /**
   * The plain path as statements committed by themselves (autocommit: no BEGIN or COMMIT round
   * trip), retried on conflicts as a unit is; when it made nothing, the general unit.
   */
  async runWrite<T>(write: TwoPathWrite<T>): Promise<T> {
    const { plain } = write;
    const done = plain
      ? await this.#track(
          this.#withRetries(() => plain.postgres(this.#db.write, this.#clock(), this.#seen)),
        )
      : null;
    return done ?? this.run(write.general);
  }

  unitOf<T>(write: TwoPathWrite<T>): WriteUnit<T> {
    const { plain } = write;
    return async (trx, nowMs) =>
      (plain ? await plain.postgres(trx, nowMs, this.#seen) : null) ?? write.general(trx, nowMs);
  }

  /** Counts `running` in `depth` and `idle()` until it settles. */
  #track<T>(running: Promise<T>): Promise<T> {
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    this.#inFlight.add(settled);
    void settled.then(() => this.#inFlight.delete(settled));
    return running;
  }

  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
  }

  /**
   * Runs `attempt` (one transaction) until it commits or refuses, again after each conflict
   * (see the module comment); `report.unitThrew` tells a refusal of the unit's own apart.
   */
  async #withRetries<T>(attempt: (report: { unitThrew: boolean }) => Promise<T>): Promise<T> {
    const deadline = performance.now() + RETRY_BUDGET_MS;
    for (let tried = 1; ; tried++) {
      const started = performance.now();
      const report = { unitThrew: false };
      try {
        const value = await attempt(report);
        this.#report(started, false, true);
        return value;
      } catch (err) {
        const { unitThrew } = report;
        if (isStorageFailure(err)) {
          this.#report(started, unitThrew, false);
          this.health.recordFailure(err);
          throw asCannotWrite(err);
        }
        const conflict = isRetryableConflict(err);
        const unavailable = !conflict && isUnavailable(err);
        // A unit that refused (402, 409, …) ended its transaction as intended: only a conflict
        // or a lost database counts as a failed transaction.
        this.#report(started, unitThrew, unitThrew && !conflict && !unavailable);
        if (conflict) {
          if (tried < MAX_ATTEMPTS && performance.now() < deadline) {
            await pause(tried);
            continue;
          }
          throw unavailableError(err);
        }
        if (err instanceof ApiError || !unavailable) throw err;
        throw unavailableError(err);
      }
    }
  }

  #report(started: number, unitThrew: boolean, committed: boolean): void {
    this.#onBatch?.({
      units: 1,
      failedUnits: unitThrew ? 1 : 0,
      durationMs: performance.now() - started,
      committed,
    });
  }
}

/** Waits a random time up to FIRST_PAUSE_MS × 2^(attempt−1), capped at MAX_PAUSE_MS. */
function pause(attempt: number): Promise<void> {
  const ceiling = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (attempt - 1));
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
}
