/**
 * Remote libSQL (sqld, Turso; Hrana over HTTP or WebSocket through `@libsql/client`): the
 * client as the service uses it, guarded so that a server that cannot be reached answers like a
 * PostgreSQL outage (docs/operations.md, "Remote libSQL: sqld or Turso").
 *
 * - Every call (a statement, a batch, a transaction's statement, commit or rollback) that fails
 *   because the server cannot be reached (refused, reset, DNS, a proxy's 502/503/504, a closed
 *   WebSocket) becomes `ApiError("SERVICE_UNAVAILABLE")`, a 503 that is safe to retry with the
 *   same Idempotency-Key. Other errors (SQL errors, constraint violations) pass unchanged.
 * - No call waits longer than REMOTE_CALL_TIMEOUT_MS: an HTTP request is aborted then, and a
 *   WebSocket call given up, so a request answers within 5 s while the server hangs. A call
 *   given up may still have been applied (a commit whose answer was lost), like any 503 here.
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

/** Milliseconds one call to the remote server may take before the caller gets a 503. */
export const REMOTE_CALL_TIMEOUT_MS = 4000;

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

/** Runs `call` within REMOTE_CALL_TIMEOUT_MS, turning unreachability into a 503. */
async function guarded<T>(call: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(unavailableError(new Error("the remote database did not answer in time"))),
      REMOTE_CALL_TIMEOUT_MS,
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

/** A `fetch` for the HTTP client that aborts a request after REMOTE_CALL_TIMEOUT_MS. */
export function fetchWithTimeout(request: Request): Promise<Response> {
  return fetch(request, { signal: AbortSignal.timeout(REMOTE_CALL_TIMEOUT_MS) });
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
  /** Savepoint statements not sent yet (see the module comment). */
  readonly #held: InStatement[] = [];

  constructor(inner: Transaction) {
    this.#inner = inner;
  }

  get closed(): boolean {
    return this.#inner.closed;
  }

  async execute(stmt: InStatement): Promise<ResultSet> {
    if (SAVEPOINT_OR_RELEASE.test(sqlOf(stmt))) {
      this.#held.push(stmt);
      return NOTHING;
    }
    if (this.#held.length === 0) return guarded(() => this.#inner.execute(stmt));
    const stmts = [...this.#held.splice(0), stmt];
    const results = await guarded(() => this.#inner.batch(stmts));
    const last = results.at(-1);
    if (last === undefined) throw new Error("a batch answered no result");
    return last;
  }

  batch(stmts: InStatement[]): Promise<ResultSet[]> {
    const held = this.#held.splice(0);
    if (held.length === 0) return guarded(() => this.#inner.batch(stmts));
    return guarded(() => this.#inner.batch([...held, ...stmts])).then((r) => r.slice(held.length));
  }

  executeMultiple(sql: string): Promise<void> {
    const held = this.#held.splice(0);
    return guarded(async () => {
      if (held.length > 0) await this.#inner.batch(held);
      await this.#inner.executeMultiple(sql);
    });
  }

  rollback(): Promise<void> {
    this.#held.length = 0;
    return guarded(() => this.#inner.rollback());
  }

  /** Savepoints still held are dropped: committing releases every savepoint. */
  commit(): Promise<void> {
    this.#held.length = 0;
    return guarded(() => this.#inner.commit());
  }

  close(): void {
    this.#inner.close();
  }
}

/** `inner` with every call guarded (see the module comment). */
export class GuardedClient implements Client {
  readonly #inner: Client;

  constructor(inner: Client) {
    this.#inner = inner;
  }

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
    return new GuardedTransaction(await guarded(() => this.#inner.transaction(mode)));
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
