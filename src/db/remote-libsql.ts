/**
 * Remote libSQL (sqld, Turso; Hrana over HTTP or WebSocket through `@libsql/client`): the
 * client as the service uses it, guarded so that a server that cannot be reached answers like a
 * PostgreSQL outage (docs/operations.md, "Remote libSQL: sqld or Turso").
 *
 * - Every call (a statement, a batch, a transaction's statement, commit or rollback) that fails
 *   because the server cannot be reached (refused, reset, DNS, a proxy's 502/503/504, a closed
 *   WebSocket) becomes `ApiError("SERVICE_UNAVAILABLE")`, a 503 that is safe to retry with the
 *   same Idempotency-Key. Other errors (SQL errors, constraint violations) pass unchanged.
 * - No call waits longer than REMOTE_CALL_TIMEOUT_MS, and no write transaction waits for the
 *   server's write lock past the deadline the write queue set for it (`WriteDeadline`,
 *   REMOTE_WRITE_BUDGET_MS after its oldest unit was handed in: its calls until the first
 *   succeeds, the one that carries `BEGIN IMMEDIATE`), so a request answers within 5 s while
 *   the server hangs or another client holds its write lock. A call given up may still have
 *   been applied (a commit whose answer was lost), like any 503 here.
 * - A call given up is not abandoned on the wire: its HTTP request goes on until the server
 *   answers (or REMOTE_FETCH_ABANDON_MS), so that the rollback the write queue sends after it
 *   goes out with the stream's baton and ends the transaction at once. An HTTP request the
 *   client aborted leaves its stream, and a `BEGIN IMMEDIATE` it carried, to the server's own
 *   expiry (10 s on sqld): every write after it would wait for the lock that long.
 * - Nothing is cached about the connection: HTTP opens a stream per call or transaction, and
 *   the WebSocket client reconnects by itself, so the service recovers without a restart.
 * - Fewer round trips: inside a transaction, the write queue's `SAVEPOINT` and `RELEASE`
 *   statements (which answer nothing) are held back and sent in one request with the next
 *   statement; at the commit, savepoints still held are dropped (a commit releases them all).
 */
import type {
  Client,
  InArgs,
  InStatement,
  Replicated,
  ResultSet,
  Transaction,
  TransactionMode,
} from "@libsql/client";
import { ApiError } from "../errors.ts";
import { NETWORK_FAILURE_CODES, unavailableError } from "./postgres.ts";
import { isStorageFailure } from "./storage-errors.ts";

/** Milliseconds one call to the remote server may take before the caller gets a 503. */
export const REMOTE_CALL_TIMEOUT_MS = 4000;

/**
 * Milliseconds a write may take on a remote server, counted from when its unit was handed to
 * the write queue, before it answers 503 (busy retries included): within the contract's 5 s
 * with room for the request's reads before it (docs/operations.md, "Remote libSQL").
 */
export const REMOTE_WRITE_BUDGET_MS = 4000;

/**
 * Milliseconds after which an HTTP request to the server is aborted, long after its caller was
 * answered (see the module comment): a bound on the sockets a server that never answers keeps.
 */
export const REMOTE_FETCH_ABANDON_MS = 30_000;

/**
 * How the write queue bounds the calls of its next write transactions (remote libSQL only; see
 * `Database.writeDeadline` in src/db/client.ts).
 */
export interface WriteDeadline {
  /** Milliseconds a write may take from when its unit was handed in: REMOTE_WRITE_BUDGET_MS. */
  readonly budgetMs: number;
  /**
   * The write transactions begun from now on give up (a 503) at `deadlineMs`
   * (`performance.now()` time) unless their first call (the one that takes the write lock) has
   * succeeded by then; every call also after REMOTE_CALL_TIMEOUT_MS. Undefined: the latter only.
   */
  set(deadlineMs: number | undefined): void;
}

const UNREACHABLE_CODES = new Set([
  ...NETWORK_FAILURE_CODES,
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  // @libsql/client: a WebSocket that failed or closed, a stream closed by a network error.
  "HRANA_WEBSOCKET_ERROR",
  "HRANA_CLOSED_ERROR",
]);

/**
 * True when `err` (or an error it was caused by) says the remote server cannot be reached or
 * cannot serve now.
 */
export function isRemoteUnavailable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && current instanceof Error; depth++) {
    if (current instanceof ApiError) return current.code === "SERVICE_UNAVAILABLE";
    const { code, status } = current as { code?: unknown; status?: unknown };
    if (typeof code === "string" && UNREACHABLE_CODES.has(code)) return true;
    if (status === 502 || status === 503 || status === 504) return true;
    if (current.name === "TimeoutError" || current.name === "AbortError") return true;
    if (current instanceof TypeError && /fetch failed/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

/**
 * Runs `call` within REMOTE_CALL_TIMEOUT_MS and before `deadlineMs` (`performance.now()` time),
 * turning unreachability into a 503.
 */
async function guarded<T>(call: () => Promise<T>, deadlineMs?: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeoutMs =
    deadlineMs === undefined
      ? REMOTE_CALL_TIMEOUT_MS
      : Math.max(0, Math.min(REMOTE_CALL_TIMEOUT_MS, deadlineMs - performance.now()));
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(unavailableError(new Error("the remote database did not answer in time"))),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([call(), deadline]);
  } catch (err) {
    if (err instanceof ApiError || !isRemoteUnavailable(err)) throw err;
    throw unavailableError(err);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A `fetch` for the HTTP client that aborts a request after REMOTE_FETCH_ABANDON_MS; its caller
 * was answered long before, by `guarded` (see the module comment).
 */
export function fetchWithTimeout(request: Request): Promise<Response> {
  return fetch(request, { signal: AbortSignal.timeout(REMOTE_FETCH_ABANDON_MS) });
}

/** A write queue's savepoint statements: they answer nothing, so they can wait for the next. */
const SAVEPOINT_OR_RELEASE = /^\s*(SAVEPOINT|RELEASE)\s+\w+\s*$/i;

function sqlOf(stmt: InStatement): string {
  return typeof stmt === "string" ? stmt : stmt.sql;
}

/** What a held statement answers. */
const NOTHING: ResultSet = {
  columns: [],
  columnTypes: [],
  rows: [],
  rowsAffected: 0,
  lastInsertRowid: undefined,
  toJSON: () => ({ columns: [], columnTypes: [], rows: [], rowsAffected: 0 }),
};

class GuardedTransaction implements Transaction {
  readonly #inner: Transaction;
  /**
   * When its calls give up (`performance.now()` time), besides REMOTE_CALL_TIMEOUT_MS, until one
   * has succeeded: the first carries the `BEGIN IMMEDIATE`, so from then on the transaction
   * holds the write lock and a long batch on a slow but working server is not cut short.
   */
  #deadlineMs: number | undefined;
  /** Savepoint statements not sent yet (see the module comment). */
  readonly #held: InStatement[] = [];

  constructor(inner: Transaction, deadlineMs: number | undefined) {
    this.#inner = inner;
    this.#deadlineMs = deadlineMs;
  }

  async #guarded<T>(call: () => Promise<T>): Promise<T> {
    const result = await guarded(call, this.#deadlineMs);
    this.#deadlineMs = undefined;
    return result;
  }

  get closed(): boolean {
    return this.#inner.closed;
  }

  async execute(stmt: InStatement): Promise<ResultSet> {
    if (SAVEPOINT_OR_RELEASE.test(sqlOf(stmt))) {
      this.#held.push(stmt);
      return NOTHING;
    }
    if (this.#held.length === 0) return this.#guarded(() => this.#inner.execute(stmt));
    const stmts = [...this.#held.splice(0), stmt];
    const results = await this.#guarded(() => this.#inner.batch(stmts));
    const last = results.at(-1);
    if (last === undefined) throw new Error("a batch answered no result");
    return last;
  }

  batch(stmts: InStatement[]): Promise<ResultSet[]> {
    const held = this.#held.splice(0);
    if (held.length === 0) return this.#guarded(() => this.#inner.batch(stmts));
    return this.#guarded(() => this.#inner.batch([...held, ...stmts])).then((r) =>
      r.slice(held.length),
    );
  }

  executeMultiple(sql: string): Promise<void> {
    const held = this.#held.splice(0);
    return this.#guarded(async () => {
      if (held.length > 0) await this.#inner.batch(held);
      await this.#inner.executeMultiple(sql);
    });
  }

  rollback(): Promise<void> {
    this.#held.length = 0;
    return this.#guarded(() => this.#inner.rollback());
  }

  /** Savepoints still held are dropped: committing releases every savepoint. */
  commit(): Promise<void> {
    this.#held.length = 0;
    return this.#guarded(() => this.#inner.commit());
  }

  close(): void {
    this.#inner.close();
  }
}

/** `inner` with every call guarded (see the module comment). */
export class GuardedClient implements Client {
  readonly #inner: Client;
  #writeDeadlineMs: number | undefined;

  constructor(inner: Client) {
    this.#inner = inner;
  }

  /** The write queue's hook on this client (see `WriteDeadline`). */
  readonly writeDeadline: WriteDeadline = {
    budgetMs: REMOTE_WRITE_BUDGET_MS,
    set: (deadlineMs) => {
      this.#writeDeadlineMs = deadlineMs;
    },
  };

  get closed(): boolean {
    return this.#inner.closed;
  }

  get protocol(): string {
    return this.#inner.protocol;
  }

  execute(stmt: InStatement): Promise<ResultSet>;
  execute(sql: string, args?: InArgs): Promise<ResultSet>;
  execute(stmtOrSql: InStatement | string, args?: InArgs): Promise<ResultSet> {
    return guarded(() =>
      typeof stmtOrSql === "string"
        ? this.#inner.execute(stmtOrSql, args)
        : this.#inner.execute(stmtOrSql),
    );
  }

  batch(stmts: (InStatement | [string, InArgs?])[], mode?: TransactionMode): Promise<ResultSet[]> {
    return guarded(() => this.#inner.batch(stmts, mode));
  }

  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    return guarded(() => this.#inner.migrate(stmts));
  }

  async transaction(mode?: TransactionMode): Promise<Transaction> {
    const deadlineMs = this.#writeDeadlineMs;
    const inner = await guarded(() => this.#inner.transaction(mode), deadlineMs);
    return new GuardedTransaction(inner, deadlineMs);
  }

  executeMultiple(sql: string): Promise<void> {
    return guarded(() => this.#inner.executeMultiple(sql));
  }

  sync(): Promise<Replicated> {
    return this.#inner.sync();
  }

  close(): void {
    this.#inner.close();
  }

  reconnect(): void {
    this.#inner.reconnect();
  }
}

/** True when `err`, met before anything was served, says the database cannot be reached. */
export function isUnreachableAtStart(err: unknown): boolean {
  return err instanceof ApiError && err.code === "SERVICE_UNAVAILABLE" && !isStorageFailure(err);
}

/**
 * The error a command reports when the database cannot be reached as it starts (the request's
 * 503, with its advice to retry with an Idempotency-Key, means nothing there): where, without
 * credentials, and why, e.g. `cannot reach the database at http://127.0.0.1:8080/
 * (ECONNREFUSED); check DATABASE_URL and that the server is running`. Remote libSQL and
 * PostgreSQL alike.
 */
export function unreachableAtStart(url: string, err: unknown): Error {
  return new Error(
    `cannot reach the database at ${withoutCredentials(url)} (${rootCause(err)}); check DATABASE_URL and that the server is running`,
    { cause: err },
  );
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    parsed.search = "";
    return parsed.toString();
  } catch {
    return "DATABASE_URL";
  }
}

/** The innermost cause of `err`: its code when it has one, else its message. */
function rootCause(err: unknown): string {
  let current: unknown = err;
  for (let depth = 0; depth < 6; depth++) {
    const next: unknown = current instanceof Error ? current.cause : undefined;
    if (next === undefined || next === null) break;
    current = next;
  }
  const code = (current as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.length > 0) return code;
  return current instanceof Error ? current.message : String(current);
}
