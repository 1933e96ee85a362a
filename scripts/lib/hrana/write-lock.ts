/**
 * The database's write lock, as the Hrana test server's streams take turns at it.
 *
 * sqld lets one connection write at a time and makes the others wait for their turn instead of
 * failing at once with SQLITE_BUSY. The `libsql` package is synchronous, so a SQLite busy
 * timeout would block the whole server (and the holder could never commit). The server
 * therefore keeps this lock itself: a stream takes it before its first write (or its BEGIN
 * IMMEDIATE) and gives it back when its connection is out of the transaction again; waiters
 * are served first come, first served. A waiter gives up after `timeoutMs` (SQLITE_BUSY), or
 * when its stream is closed; a holder whose stream expires releases it (the stream's close).
 */
import { HranaError } from "./proto.ts";

interface Waiter {
  owner: object;
  grant: () => void;
  refuse: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class WriteLock {
  #holder: object | null = null;
  #waiters: Waiter[] = [];

  /** The stream holding the lock, if any. */
  get holder(): object | null {
    return this.#holder;
  }

  /** Streams waiting for the lock. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Takes the lock for `owner` (at once when free or already its own).
   * @throws HranaError SQLITE_BUSY after `timeoutMs`, or when `cancel(owner)` is called
   */
  acquire(owner: object, timeoutMs: number): Promise<void> {
    if (this.#holder === null || this.#holder === owner) {
      this.#holder = owner;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        owner,
        grant: resolve,
        refuse: reject,
        timer: setTimeout(() => {
          this.#remove(waiter);
          reject(new HranaError("SQLite error: database is locked", "SQLITE_BUSY"));
        }, timeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  /** Gives the lock back when `owner` holds it, and hands it to the next waiter. */
  release(owner: object): void {
    if (this.#holder !== owner) return;
    this.#holder = null;
    const next = this.#waiters.shift();
    if (next) {
      clearTimeout(next.timer);
      this.#holder = next.owner;
      next.grant();
    }
  }

  /** Ends `owner`'s waits (its stream is closing). */
  cancel(owner: object): void {
    for (const waiter of this.#waiters.filter((w) => w.owner === owner)) {
      this.#remove(waiter);
      waiter.refuse(new HranaError("The stream was closed", "STREAM_CLOSED"));
    }
  }

  #remove(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    this.#waiters = this.#waiters.filter((w) => w !== waiter);
  }
}
