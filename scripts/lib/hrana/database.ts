/**
 * The database a Hrana test server serves: its file, its write lock (write-lock.ts), a small
 * pool of idle SQLite connections with their prepared statements, and the statement log.
 */
import LibsqlDatabase from "libsql";
import type { WriteLock } from "./write-lock.ts";

/** A connection of the `libsql` package, and a statement prepared on it. */
export type Connection = InstanceType<typeof LibsqlDatabase>;
export type Prepared = ReturnType<Connection["prepare"]>;

/** One line of the server's statement log (for counting round trips and statements). */
export type LogEntry =
  | { event: "pipeline"; stream: number; requests: string[] }
  | { event: "stmt"; stream: number; sql: string; waitedMs?: number };

/** The database a server serves: its file, its write lock, a pool of idle connections. */
export class SharedDatabase {
  readonly path: string;
  readonly lock: WriteLock;
  readonly lockTimeoutMs: number;
  readonly synchronous: "FULL" | "NORMAL";
  readonly log: ((entry: LogEntry) => void) | undefined;
  readonly #idle: Connection[] = [];
  readonly #statements = new WeakMap<Connection, Map<string, Prepared>>();

  constructor(options: {
    path: string;
    lock: WriteLock;
    lockTimeoutMs: number;
    synchronous: "FULL" | "NORMAL";
    log?: ((entry: LogEntry) => void) | undefined;
  }) {
    this.synchronous = options.synchronous;
    this.path = options.path;
    this.lock = options.lock;
    this.lockTimeoutMs = options.lockTimeoutMs;
    this.log = options.log;
    const first = this.#open();
    first.exec("PRAGMA journal_mode = WAL");
    this.#idle.push(first);
  }

  #open(): Connection {
    // The write lock keeps writers apart; the short busy timeout only covers SQLite's own
    // brief locks (a checkpoint), since waiting here blocks the whole process.
    const conn = new LibsqlDatabase(this.path);
    conn.exec("PRAGMA busy_timeout = 100");
    conn.exec(`PRAGMA synchronous = ${this.synchronous}`);
    return conn;
  }

  /** A connection in autocommit state. */
  take(): Connection {
    return this.#idle.pop() ?? this.#open();
  }

  /** Returns `conn` to the pool (at most 16 kept), or closes it. */
  give(conn: Connection): void {
    if (!conn.inTransaction && this.#idle.length < 16) this.#idle.push(conn);
    else conn.close();
  }

  /** `sql` prepared on `conn`, from the connection's cache. */
  prepare(conn: Connection, sql: string): Prepared {
    let cache = this.#statements.get(conn);
    if (!cache) {
      cache = new Map();
      this.#statements.set(conn, cache);
    }
    let stmt = cache.get(sql);
    if (!stmt) {
      if (cache.size >= 500) cache.clear();
      stmt = conn.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  }

  closeAll(): void {
    for (const conn of this.#idle.splice(0)) conn.close();
  }
}
