/**
 * Whether the database can write, as the write path last found it; `/ready` answers 503 while
 * it cannot (see docs/design.md, "When the database cannot write").
 *
 * An episode begins with the first write that fails because the database cannot write (a full
 * disk or database, an I/O error; src/db/storage-errors.ts) and is logged once, at `error`,
 * naming the database's own error. While it lasts, every request still tries its write (so
 * writes succeed again as soon as space is back); in addition, once no write has failed for
 * QUIET_MS, a probe (one tiny real write through the write path) runs every PROBE_INTERVAL_MS.
 * The episode ends when a probe succeeds and no other write failed meanwhile; that is logged
 * once, at `info`, with the number of writes that failed. Nothing is probed while writes work.
 *
 * A remote libSQL server that is busy (another client holds its write lock) or cannot be
 * reached makes an episode too (`recordUnavailable`): there the first write that commits again
 * ends it (`recordCommit`), a request's or the probe's, since no small write can succeed where
 * others fail for that reason. An episode in which a write failed for lack of space ends only
 * by the probe.
 */
import { describeDatabaseError } from "./storage-errors.ts";

/** Milliseconds between two probes while the database cannot write. */
export const PROBE_INTERVAL_MS = 1000;
/** Milliseconds without a failed write before a probe may end the episode. */
export const QUIET_MS = 2000;

/** The part of the service's logger used here. */
export interface HealthLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** The episode in progress. */
export interface WriteFailure {
  /** When its first write failed, epoch ms. */
  sinceMs: number;
  /** The database's error of its latest failed write, `CODE: message`. */
  error: string;
  /** Writes that failed so far in it (probes included). */
  failures: number;
}

/** What the write path records, and what `/ready` reads. */
export class WriteHealth {
  readonly #probe: () => Promise<unknown>;
  readonly #logger: HealthLogger | undefined;
  #failure: (WriteFailure & { lastMs: number; storage: boolean }) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /**
   * @param probe one tiny write through the write path (rejects when it fails)
   * @param logger where the start and the end of an episode are logged
   */
  constructor(probe: () => Promise<unknown>, logger?: HealthLogger) {
    this.#probe = probe;
    this.#logger = logger;
  }

  /** The episode in progress, or undefined while the database writes. */
  get failure(): WriteFailure | undefined {
    if (!this.#failure) return undefined;
    const { sinceMs, error, failures } = this.#failure;
    return { sinceMs, error, failures };
  }

  /** Records a write that failed because the database cannot write. */
  recordFailure(err: unknown): void {
    this.#record(err, true);
  }

  /**
   * Records a write refused because the remote database is busy (another client holds its write
   * lock) or cannot be reached: `/ready` answers 503 until a write commits again.
   */
  recordUnavailable(err: unknown): void {
    this.#record(err, false);
  }

  /**
   * Records a write transaction that committed. It ends an episode of a busy or unreachable
   * database; one in which a write failed for lack of space is left to the probe.
   */
  recordCommit(): void {
    const failure = this.#failure;
    if (failure && !failure.storage) this.#end(failure);
  }

  #record(err: unknown, storage: boolean): void {
    const now = Date.now();
    const error = describeDatabaseError(err);
    if (this.#failure) {
      this.#failure.failures++;
      this.#failure.error = error;
      this.#failure.lastMs = now;
      this.#failure.storage ||= storage;
      return;
    }
    this.#failure = { sinceMs: now, error, failures: 1, lastMs: now, storage };
    this.#logger?.error({ err: error }, "database cannot write");
    this.#schedule();
  }

  #end(failure: WriteFailure): void {
    this.#failure = undefined;
    this.#logger?.info(
      { failures: failure.failures, durationMs: Date.now() - failure.sinceMs },
      "database can write again",
    );
  }

  /** Stops probing (the database is closing). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#tick();
    }, PROBE_INTERVAL_MS);
    // Probing never keeps a process alive by itself.
    this.#timer.unref?.();
  }

  async #tick(): Promise<void> {
    const failure = this.#failure;
    if (!failure || this.#stopped) return;
    if (Date.now() - failure.lastMs >= QUIET_MS) {
      const failuresBefore = failure.failures;
      let ok = false;
      try {
        await this.#probe();
        ok = true;
      } catch {
        // A probe that failed for lack of space was recorded by the write path; any other
        // failure (a busy or closing database) proves nothing either way.
      }
      if (this.#stopped) return;
      if (ok && this.#failure === failure && failure.failures === failuresBefore) {
        this.#end(failure);
        return;
      }
    }
    this.#schedule();
  }
}
