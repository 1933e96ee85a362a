/**
 * A Kysely dialect over the synchronous `libsql` package (the same engine as `@libsql/client`,
 * better-sqlite3's API) for embedded `file:` databases: no per-statement promise or pool
 * overhead, prepared statements reused from a cache, and write transactions that begin with
 * `BEGIN IMMEDIATE` so the write lock is taken up front (docs/operations.md).
 */
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";
import type LibsqlDatabase from "libsql";

type NativeDb = InstanceType<typeof LibsqlDatabase>;
type NativeStatement = ReturnType<NativeDb["prepare"]>;

/** Most statements kept prepared per connection; the cache is cleared when it fills. */
const STATEMENT_CACHE_LIMIT = 1000;

class NativeConnection implements DatabaseConnection {
  readonly #db: NativeDb;
  readonly #statements = new Map<string, { stmt: NativeStatement; reader: boolean }>();

  constructor(db: NativeDb) {
    this.#db = db;
  }

  #prepare(sql: string): { stmt: NativeStatement; reader: boolean } {
    let entry = this.#statements.get(sql);
    if (!entry) {
      if (this.#statements.size >= STATEMENT_CACHE_LIMIT) this.#statements.clear();
      const stmt = this.#db.prepare(sql);
      entry = { stmt, reader: stmt.reader };
      this.#statements.set(sql, entry);
    }
    return entry;
  }

  executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    try {
      const { stmt, reader } = this.#prepare(compiled.sql);
      const params = compiled.parameters as unknown[];
      if (reader) return Promise.resolve({ rows: stmt.all(params) as R[] });
      const { changes, lastInsertRowid } = stmt.run(params);
      return Promise.resolve({
        numAffectedRows: BigInt(changes ?? 0),
        insertId: lastInsertRowid == null ? undefined : BigInt(lastInsertRowid),
        rows: [],
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported by this driver.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming is not supported");
  }
}

class NativeDriver implements Driver {
  readonly #db: NativeDb;
  readonly #connection: NativeConnection;
  /** Whether a Kysely user holds the connection; waiters are served first come, first served. */
  #held = false;
  readonly #waiters: (() => void)[] = [];

  constructor(db: NativeDb) {
    this.#db = db;
    this.#connection = new NativeConnection(db);
  }

  async init(): Promise<void> {}

  /** One connection; a FIFO mutex hands it to one Kysely user at a time. */
  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#held = true;
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held = false;
  }

  async beginTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw("BEGIN IMMEDIATE"));
  }

  async commitTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw("COMMIT"));
  }

  async rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    // After SQLITE_FULL or an I/O error SQLite may have rolled the transaction back by itself:
    // a ROLLBACK would then fail ("no transaction is active") and hide the error that matters.
    if (!this.#db.inTransaction) return;
    await conn.executeQuery(CompiledQuery.raw("ROLLBACK"));
  }

  async destroy(): Promise<void> {
    this.#db.close();
  }
}

/**
 * Kysely's SQLite adapter, saying that DDL is transactional (SQLite's is): Kysely's Migrator
 * then applies the pending migrations and their records in one transaction, so a migration
 * that fails, or is cut off (a process killed, a remote server gone), leaves nothing half done.
 * Kysely's own adapter says otherwise and runs each statement on its own.
 */
export class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** The Kysely dialect: `new Kysely<DB>({ dialect: new NativeSqliteDialect(db) })`. */
export class NativeSqliteDialect implements Dialect {
  readonly #db: NativeDb;

  constructor(db: NativeDb) {
    this.#db = db;
  }

  createDriver(): Driver {
    return new NativeDriver(this.#db);
  }

  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }

  createAdapter() {
    return new TransactionalDdlSqliteAdapter();
  }

  createIntrospector(db: Kysely<unknown>) {
    return new SqliteIntrospector(db);
  }
}
