/**
 * A Hrana stream of the test server: one SQLite connection (from the database's small pool),
 * the SQL texts stored on it, and the requests run on it one after another. Statements that
 * write take the database's write lock first (write-lock.ts); the stream gives it back as soon
 * as its connection is out of the transaction again, and on close (rolling back what is open).
 */

import type { Connection, Prepared, SharedDatabase } from "./database.ts";
import {
  type Batch,
  type BatchCond,
  type BatchResult,
  type DescribeResult,
  fromSql,
  HranaError,
  type SqlValue,
  type Stmt,
  type StmtResult,
  type StreamRequest,
  type StreamResponse,
  sqliteError,
  toSql,
} from "./proto.ts";
import { sqlKind } from "./sql-kind.ts";

let nextStreamId = 1;

export class Stream {
  readonly id = nextStreamId++;
  readonly #db: SharedDatabase;
  readonly #sqls: Map<number, string>;
  #conn: Connection | null;
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;
  lastUsedMs = Date.now();

  /** `sqls`: the stored SQL texts this stream sees (its own over HTTP, the socket's over WS). */
  constructor(db: SharedDatabase, sqls: Map<number, string> = new Map()) {
    this.#db = db;
    this.#sqls = sqls;
    this.#conn = db.take();
  }

  get closed(): boolean {
    return this.#conn === null;
  }

  /** True while a request runs or waits on this stream. */
  get busy(): boolean {
    return this.#pending > 0;
  }

  /** Runs `request` after every request handed in before it. */
  run(request: StreamRequest): Promise<StreamResponse> {
    this.#pending++;
    const result = this.#tail.then(() => this.#handle(request));
    this.#tail = result.catch(() => undefined);
    return result.finally(() => {
      this.#pending--;
      this.lastUsedMs = Date.now();
    });
  }

  /** Rolls back what is open, gives the lock and the connection back. Idempotent. */
  close(): void {
    const conn = this.#conn;
    if (!conn) return;
    this.#conn = null;
    this.#db.lock.cancel(this);
    if (conn.inTransaction) {
      try {
        conn.exec("ROLLBACK");
      } catch {}
    }
    this.#db.lock.release(this);
    this.#db.give(conn);
  }

  #connection(): Connection {
    if (!this.#conn) throw new HranaError("The stream is closed", "STREAM_CLOSED");
    return this.#conn;
  }

  async #handle(request: StreamRequest): Promise<StreamResponse> {
    switch (request.type) {
      case "close":
        this.close();
        return { type: "close" };
      case "execute":
        return { type: "execute", result: await this.#execute(request.stmt) };
      case "batch":
        return { type: "batch", result: await this.#batch(request.batch) };
      case "sequence":
        await this.#sequence(this.#sqlOf(request.sql, request.sql_id));
        return { type: "sequence" };
      case "describe":
        return {
          type: "describe",
          result: this.#describe(this.#sqlOf(request.sql, request.sql_id)),
        };
      case "store_sql":
        this.#sqls.set(request.sql_id, request.sql);
        return { type: "store_sql" };
      case "close_sql":
        this.#sqls.delete(request.sql_id);
        return { type: "close_sql" };
      case "get_autocommit":
        return { type: "get_autocommit", is_autocommit: !this.#connection().inTransaction };
    }
  }

  #sqlOf(sql: string | null | undefined, sqlId: number | null | undefined): string {
    if (sql != null && sqlId != null) throw new HranaError("Both sql and sql_id given", "PROTOCOL");
    if (sql != null) return sql;
    if (sqlId != null) {
      const stored = this.#sqls.get(sqlId);
      if (stored === undefined) throw new HranaError(`No SQL text ${sqlId}`, "SQL_NOT_FOUND");
      return stored;
    }
    throw new HranaError("Neither sql nor sql_id given", "PROTOCOL");
  }

  /** Takes the write lock for a statement that writes; logs how long that took. */
  async #lockFor(writes: boolean): Promise<number | undefined> {
    if (!writes || this.#db.lock.holder === this) return undefined;
    const started = performance.now();
    await this.#db.lock.acquire(this, this.#db.lockTimeoutMs);
    if (this.closed) {
      this.#db.lock.release(this);
      throw new HranaError("The stream is closed", "STREAM_CLOSED");
    }
    return performance.now() - started;
  }

  /** Gives the lock back once the connection is out of its transaction. */
  #settleLock(): void {
    if (this.#conn && !this.#conn.inTransaction) this.#db.lock.release(this);
  }

  async #execute(stmt: Stmt): Promise<StmtResult> {
    const sql = this.#sqlOf(stmt.sql, stmt.sql_id);
    const kind = sqlKind(sql);
    const waitedMs = await this.#lockFor(kind.writes);
    this.#db.log?.({
      event: "stmt",
      stream: this.id,
      sql,
      ...(waitedMs === undefined ? {} : { waitedMs }),
    });
    try {
      const conn = this.#connection();
      let prepared: Prepared;
      try {
        prepared = this.#db.prepare(conn, sql);
      } catch (err) {
        throw sqliteError(err);
      }
      const args = bindings(stmt);
      const cols = prepared.columns().map((c) => ({ name: c.name, decltype: c.type }));
      let rows: unknown[] = [];
      try {
        if (prepared.reader) rows = prepared.raw(true).safeIntegers(true).all(args);
        else prepared.run(args);
      } catch (err) {
        throw sqliteError(err);
      }
      // sqld reports changes() only for INSERT, UPDATE and DELETE (rows the statement itself
      // changed, not its triggers), and the last rowid only for an INSERT.
      const counts = kind.iud ? this.#counts(conn) : undefined;
      return {
        cols,
        rows: stmt.want_rows === false ? [] : rows.map((row) => (row as unknown[]).map(fromSql)),
        affected_row_count: counts ? counts.changes : 0,
        last_insert_rowid: kind.insert && counts ? counts.lastRowid : null,
      };
    } finally {
      this.#settleLock();
    }
  }

  #counts(conn: Connection): { changes: number; lastRowid: string } {
    const row = this.#db
      .prepare(conn, "SELECT changes(), last_insert_rowid()")
      .raw(true)
      .safeIntegers(true)
      .get([]) as [bigint, bigint];
    return { changes: Number(row[0]), lastRowid: row[1].toString() };
  }

  async #batch(batch: Batch): Promise<BatchResult> {
    const outcomes: boolean[] = [];
    const result: BatchResult = { step_results: [], step_errors: [] };
    for (const step of batch.steps) {
      let enabled = true;
      if (step.condition) {
        try {
          enabled = this.#holds(step.condition, outcomes);
        } catch (err) {
          result.step_results.push(null);
          result.step_errors.push(sqliteError(err).toBody());
          outcomes.push(false);
          continue;
        }
      }
      if (!enabled) {
        result.step_results.push(null);
        result.step_errors.push(null);
        outcomes.push(false);
        continue;
      }
      try {
        result.step_results.push(await this.#execute(step.stmt));
        result.step_errors.push(null);
        outcomes.push(true);
      } catch (err) {
        result.step_results.push(null);
        result.step_errors.push(sqliteError(err).toBody());
        outcomes.push(false);
      }
    }
    return result;
  }

  #holds(cond: BatchCond, outcomes: boolean[]): boolean {
    const stepOutcome = (step: number) => {
      const outcome = outcomes[step];
      if (outcome === undefined) throw new HranaError(`Step ${step} has not run`, "PROTOCOL");
      return outcome;
    };
    switch (cond.type) {
      case "ok":
        return stepOutcome(cond.step);
      case "error":
        return !stepOutcome(cond.step);
      case "not":
        return !this.#holds(cond.cond, outcomes);
      case "and":
        return cond.conds.every((c) => this.#holds(c, outcomes));
      case "or":
        return cond.conds.some((c) => this.#holds(c, outcomes));
      case "is_autocommit":
        return !this.#connection().inTransaction;
    }
  }

  async #sequence(sql: string): Promise<void> {
    // Several statements of any kind: taken as a write, whatever they are.
    const waitedMs = await this.#lockFor(true);
    this.#db.log?.({
      event: "stmt",
      stream: this.id,
      sql,
      ...(waitedMs === undefined ? {} : { waitedMs }),
    });
    try {
      this.#connection().exec(sql);
    } catch (err) {
      throw sqliteError(err);
    } finally {
      this.#settleLock();
    }
  }

  #describe(sql: string): DescribeResult {
    let prepared: Prepared;
    try {
      prepared = this.#db.prepare(this.#connection(), sql);
    } catch (err) {
      throw sqliteError(err);
    }
    const kind = sqlKind(sql);
    return {
      // The `libsql` package does not expose a statement's parameters.
      params: [],
      cols: prepared.columns().map((c) => ({ name: c.name, decltype: c.type })),
      is_explain: kind.explain,
      is_readonly: kind.readonly,
    };
  }
}

/** A statement's arguments as the `libsql` package binds them (names without their prefix). */
function bindings(stmt: Stmt): SqlValue[] | Record<string, SqlValue> {
  const named = stmt.named_args ?? [];
  if (named.length === 0) return (stmt.args ?? []).map(toSql);
  if ((stmt.args ?? []).length > 0) {
    throw new HranaError(
      "Specifying both positional and named arguments is not supported",
      "ARGS_BOTH_POSITIONAL_AND_NAMED",
    );
  }
  const out: Record<string, SqlValue> = {};
  for (const arg of named) out[arg.name.replace(/^[:@$]/, "")] = toSql(arg.value);
  return out;
}
