/**
 * The PostgreSQL engine: a node-postgres pool behind Kysely's PostgresDialect, with the timeouts
 * that keep a request from hanging when the database goes away, and the error classes the write
 * path acts on. See docs/design.md, "Engines: SQLite and PostgreSQL".
 *
 * - Every connection has a connect timeout, a client-side query timeout and server-side
 *   statement and lock timeouts, so a request answers within 5 s whatever the database does.
 * - A database that cannot be reached (refused, reset, shutting down, timed out) becomes
 *   `ApiError("SERVICE_UNAVAILABLE")` (503) at the driver, for reads and writes alike, and the
 *   broken connection is dropped from the pool. A database out of space (SQLSTATE class 53
 *   but 53300) or failing I/O (58030) becomes a 503 `CannotWriteError` (src/db/storage-errors.ts)
 *   on a connection that is kept. The pool opens new connections on demand, so the
 *   service reconnects by itself once the database is back.
 * - Errors of idle or checked-out connections are caught (an unhandled `error` event would end
 *   the process).
 * - BIGINT (int8) columns read as JS numbers (every stored value is below 2^53; a larger one
 *   throws rather than loses digits); NUMERIC (e.g. SUM over BIGINT) stays a decimal string.
 * - Round trips are few (docs/design.md#round-trips-on-postgresql): the statements that
 *   `prepared()` builds run as named prepared statements (parsed and planned once per
 *   connection), and a transaction's BEGIN is not sent on its own but in one write with the
 *   transaction's first statement (the connection is in pipeline mode, so the server reads both
 *   at once and answers both in order).
 */
import {
  Kysely,
  type PostgresCursor,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
} from "kysely";
import pg from "pg";
import { ApiError } from "../errors.ts";
import { statementName } from "./prepared.ts";
import type { DB } from "./schema.ts";
import { CannotWriteError, isStorageFailure } from "./storage-errors.ts";

/** Milliseconds to open a connection, or to wait for a free one in the pool. */
export const PG_CONNECT_TIMEOUT_MS = 3000;
/** Milliseconds the server lets one statement run (the service's statements take a few ms). */
export const PG_STATEMENT_TIMEOUT_MS = 3500;
/** Milliseconds the client waits for a statement's answer before dropping the connection. */
export const PG_QUERY_TIMEOUT_MS = 4000;
/** Milliseconds a statement waits for a row lock before failing with 55P03 (then retried). */
export const PG_LOCK_TIMEOUT_MS = 2000;
/** Milliseconds a session may sit idle inside a transaction before the server ends it. */
export const PG_IDLE_IN_TRANSACTION_MS = 30_000;

/**
 * A statement whose text starts with this comment lifts the client-side timeout for the rest of
 * the connection's checkout (one transaction, or one `connection()` block): the migrator waiting
 * for another process's migrations, and `ledger verify` reading a large ledger. Such a checkout
 * also sets `statement_timeout` to 0 for itself.
 */
export const UNBOUNDED_STATEMENT = "/* ledger:unbounded */ ";
/** The client-side timeout of an unbounded statement (about 24 days: none in practice). */
const UNBOUNDED_MS = 2 ** 31 - 1;

/** `postgres://…` or `postgresql://…`. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export interface PostgresOptions {
  url: string;
  /** Most connections this process opens (DATABASE_POOL_MAX). */
  poolMax: number;
  /** Told about errors of connections that no request was using (logged, never thrown). */
  onIdleError?: (err: Error) => void;
}

/** SQLSTATEs of a conflict between transactions: retried by the write path. */
const CONFLICT_CODES = new Set(["40001", "40P01", "55P03"]);

/**
 * Unique constraints that two processes can both try to satisfy at once (the same
 * Idempotency-Key, externalId, project name, plan period, active assignment). Each unit checks
 * for the row first; a violation means a concurrent unit inserted it after that check, and a
 * retry sees the row and takes the path the service has for it (a replay, a 409, a no-op).
 */
const RETRYABLE_UNIQUE = new Set([
  "idempotency_keys_pkey",
  "accounts_project_external_key",
  "projects_name_key",
  "plan_grants_pkey",
  "account_plans_one_active",
  "accounts_stripe_customer",
]);

/** SQLSTATE classes and codes that mean the database cannot serve now. */
const UNAVAILABLE_CODE = /^(08|57P0[1-4]|53300|57014)/;
/** The system error codes of a connection that failed or was lost (a network, not a database). */
export const NETWORK_FAILURE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
]);
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Connection ended|connection timeout/i;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}

/**
 * True for a conflict that a fresh transaction may not meet again: a serialization failure, a
 * deadlock, a lock timeout, or a unique violation of a constraint in RETRYABLE_UNIQUE.
 */
export function isRetryableConflict(err: unknown): boolean {
  const code = codeOf(err);
  if (CONFLICT_CODES.has(code)) return true;
  const constraint = (err as { constraint?: unknown } | null)?.constraint;
  return code === "23505" && typeof constraint === "string" && RETRYABLE_UNIQUE.has(constraint);
}

/** True when `err` says the database cannot be reached or cannot serve now. */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof ApiError) return err.code === "SERVICE_UNAVAILABLE";
  const code = codeOf(err);
  if (NETWORK_FAILURE_CODES.has(code) || UNAVAILABLE_CODE.test(code)) return true;
  const message = err instanceof Error ? err.message : "";
  return UNAVAILABLE_MESSAGE.test(message);
}

/** The 503 a caller sees; safe to retry with the same Idempotency-Key. */
export function unavailableError(cause?: unknown): ApiError {
  const err = new ApiError(
    "SERVICE_UNAVAILABLE",
    "The database is unavailable; retry later (with the same Idempotency-Key)",
  );
  if (cause !== undefined) Object.defineProperty(err, "cause", { value: cause });
  return err;
}

/** Reads an int8 as a JS number, refusing one that a double cannot hold exactly. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`int8 value ${text} is beyond 2^53`);
  return value;
}

/** What a statement that sends nothing answers (a BEGIN held back, an empty transaction). */
const NOTHING_SENT: PostgresQueryResult<never> = { command: "SELECT", rowCount: 0, rows: [] };

/**
 * A pooled client as Kysely's dialect sees it: connection-level failures become 503 ApiErrors
 * and mark the client broken, so that its release destroys it instead of returning it to the
 * pool. The statements of `prepared()` run named; a BEGIN waits for the transaction's first
 * statement and goes out in the same write.
 */
class GuardedClient implements PostgresPoolClient {
  readonly #client: pg.PoolClient;
  #broken = false;
  #unbounded = false;
  /** A BEGIN asked for and not sent yet. */
  #beginHeld = false;

  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters?: ReadonlyArray<unknown>,
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // The dialect passes a cursor only for streamed queries, which the service never makes.
    if (typeof sqlOrCursor !== "string") throw new Error("streamed queries are not supported");
    return this.#run<R>(sqlOrCursor, parameters ?? []);
  }

  async #run<R>(text: string, values: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    if (text.startsWith(UNBOUNDED_STATEMENT)) this.#unbounded = true;
    if (text === "begin") {
      this.#beginHeld = true;
      return NOTHING_SENT;
    }
    const withBegin = this.#beginHeld;
    this.#beginHeld = false;
    // A transaction that ran no statement has nothing to commit or roll back.
    if (withBegin && (text === "commit" || text === "rollback")) return NOTHING_SENT;
    try {
      const result = withBegin
        ? await this.#afterBegin(text, values)
        : await this.#send(text, values);
      const rows: R[] = result.rows;
      return { command: commandOf(result.command), rowCount: result.rowCount ?? 0, rows };
    } catch (err) {
      // Out of space or an I/O error: a 503 too, on a connection that stays good.
      if (isStorageFailure(err)) throw new CannotWriteError(err);
      if (!isUnavailable(err)) throw err;
      this.#broken = true;
      throw unavailableError(err);
    }
  }

  #send(text: string, values: ReadonlyArray<unknown>) {
    const name = statementName(text);
    return this.#client.query({
      text,
      values: [...values],
      ...(name === undefined ? {} : { name }),
      ...(this.#unbounded ? { query_timeout: UNBOUNDED_MS } : {}),
    });
  }

  /**
   * Sends the held BEGIN and `text` in one write (the socket is corked while both are queued;
   * pipeline mode lets the second go out before the first is answered).
   * @returns `text`'s result, once BEGIN has succeeded too
   */
  async #afterBegin(text: string, values: ReadonlyArray<unknown>) {
    const stream = this.#client.connection.stream;
    stream.cork();
    const begin = this.#send("begin", []);
    const statement = this.#send(text, values);
    stream.uncork();
    const [began, result] = await Promise.allSettled([begin, statement]);
    if (began.status === "rejected") throw began.reason;
    if (result.status === "rejected") throw result.reason;
    return result.value;
  }

  release(): void {
    this.#client.release(this.#broken ? true : undefined);
  }
}

/** The command tag as the dialect types it (it counts affected rows of the write commands). */
function commandOf(tag: string): PostgresQueryResult<unknown>["command"] {
  switch (tag) {
    case "INSERT":
    case "UPDATE":
    case "DELETE":
    case "MERGE":
      return tag;
    default:
      return "SELECT";
  }
}

/** Clients that already have an error listener (a pooled client is checked out many times). */
const listened = new WeakSet<pg.PoolClient>();

/**
 * Opens a pool on `options.url` (nothing connects until the first query).
 * @returns one Kysely instance for reads and writes, and the pool's `end`
 */
export function openPostgres(options: PostgresOptions): { db: Kysely<DB>; pool: pg.Pool } {
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, parseInt8);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolMax,
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    query_timeout: PG_QUERY_TIMEOUT_MS,
    statement_timeout: PG_STATEMENT_TIMEOUT_MS,
    lock_timeout: PG_LOCK_TIMEOUT_MS,
    idle_in_transaction_session_timeout: PG_IDLE_IN_TRANSACTION_MS,
    application_name: "credit-ledger",
    keepAlive: true,
    // Lets a held BEGIN go out with the next statement (GuardedClient); every statement is still
    // awaited before the next one is issued.
    pipeline: true,
    types,
  });
  // An idle client whose server went away emits `error` on the pool; unhandled, it would end
  // the process. The pool drops that client by itself.
  pool.on("error", (err) => options.onIdleError?.(err));
  const guarded: PostgresPool = {
    connect: async () => {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw unavailableError(err);
      }
      if (!listened.has(client)) {
        // A checked-out client can also fail between two statements; the failing statement
        // reports it, so the event itself only needs a listener.
        client.on("error", () => {});
        listened.add(client);
      }
      return new GuardedClient(client);
    },
    end: () => pool.end(),
  };
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: guarded }) });
  return { db, pool };
}
