/**
 * Queries built and compiled by Kysely once per engine, then run many times with new parameters.
 *
 * Building and compiling a Kysely query costs about 10 µs, twice what SQLite needs to run a
 * point query through a reused prepared statement, so the hot path of every write (auth, the
 * account, its holds, the ledger entry) uses `prepared(...)`: the query is built with named
 * markers in place of values, compiled on first use, and each call only fills the parameter
 * array. The SQL text stays identical, so the driver reuses its prepared statement too.
 *
 * SQLite and PostgreSQL differ in placeholders (`?` against `$1`) and in a few functions, so a
 * query is compiled once for each engine it runs on, and its builder is told which one. On
 * PostgreSQL each such query also has a statement name (`statementName`), under which the driver
 * prepares it once per connection, so the server parses and plans it once, not at every call.
 */
import {
  type Compilable,
  type CompiledQuery,
  type DatabaseIntrospector,
  type DialectAdapter,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";
import { type Engine, engineOf } from "./engine.ts";
import type { DB } from "./schema.ts";

/**
 * A Kysely instance that only builds and compiles queries in one engine's SQL, made of that
 * engine's adapter, introspector and compiler classes (it has no connection: it cannot run them).
 */
function compileOnly(
  Adapter: new () => DialectAdapter,
  Introspector: new (db: Kysely<DB>) => DatabaseIntrospector,
  Compiler: new () => QueryCompiler,
): Kysely<DB> {
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => new Adapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new Introspector(db),
      createQueryCompiler: () => new Compiler(),
    },
  });
}

/** The query builders of each engine. */
const builders: Record<Engine, Kysely<DB>> = {
  sqlite: compileOnly(SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler),
  postgres: compileOnly(PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler),
};

/**
 * The text of `build`'s query in `engine`'s SQL, every value written into it (`sql.lit`,
 * `sql.raw`): for database code generated from TypeScript (src/admission/postgres.ts).
 * @throws Error (a bug) when the query has parameters, which such code cannot carry
 */
export function sqlText(engine: Engine, build: (db: Kysely<DB>) => CompiledQuery): string {
  const query = build(builders[engine]);
  if (query.parameters.length > 0) throw new Error(`sqlText: parameters in ${query.sql}`);
  return query.sql;
}

const MARKER = "\u0000prepared:";

/** The PostgreSQL text of every prepared query compiled so far → its statement name. */
const names = new Map<string, string>();

/** The statement name of a prepared query's PostgreSQL text, or undefined for any other text. */
export function statementName(text: string): string | undefined {
  return names.get(text);
}

/** Stands for the named argument inside a prepared query's builder. */
export type Arg<A> = <K extends keyof A & string>(name: K) => A[K];

type Slot = { name: string } | { value: unknown };

/** A prepared query: the compiled query for a database and the arguments. */
export interface Prepared<A, R> {
  (db: Kysely<DB>, args: A): CompiledQuery<R>;
  /**
   * The query's SQL text on `engine`, and the name of the argument behind each parameter, in
   * order (`null` for a value fixed in the builder): for tools that run the service's own
   * statements elsewhere (the bench's pgbench script).
   */
  describe(engine: Engine): { sql: string; parameters: (string | null)[] };
}

/**
 * Prepares a query: `build(db, arg, engine)` is called once per engine, with `arg(name)`
 * standing for each value; `engine` lets a builder use an engine's own SQL where they differ.
 * @returns a function from the database (a Kysely instance or transaction, which decides the
 *   engine) and the arguments to the compiled query, to run with `db.executeQuery(compiled)`
 */
export function prepared<A extends Record<string, unknown>, R>(
  build: (db: Kysely<DB>, arg: Arg<A>, engine: Engine) => Compilable<R>,
): Prepared<A, R> {
  const compiled: Partial<Record<Engine, { query: CompiledQuery<R>; slots: Slot[] }>> = {};
  const compile = (engine: Engine) => {
    const arg = ((name: string) => `${MARKER}${name}`) as Arg<A>;
    const query = build(builders[engine], arg, engine).compile();
    const slots = query.parameters.map(
      (p): Slot =>
        typeof p === "string" && p.startsWith(MARKER)
          ? { name: p.slice(MARKER.length) }
          : { value: p },
    );
    const entry = { query, slots };
    compiled[engine] = entry;
    if (engine === "postgres" && !names.has(query.sql))
      names.set(query.sql, `ledger_${names.size}`);
    return entry;
  };
  const run = (db: Kysely<DB>, args: A) => {
    const engine = engineOf(db);
    const { query, slots } = compiled[engine] ?? compile(engine);
    const parameters = slots.map((slot) => ("name" in slot ? args[slot.name] : slot.value));
    return { ...query, parameters };
  };
  const describe = (engine: Engine) => {
    const { query, slots } = compiled[engine] ?? compile(engine);
    return { sql: query.sql, parameters: slots.map((slot) => ("name" in slot ? slot.name : null)) };
  };
  return Object.assign(run, { describe });
}

/**
 * The values of a prepared insert whose every column is a named argument of the same name:
 * `{ [column]: arg(column) }` for each of `columns`, in their order (the order of the SQL's
 * column list).
 */
export function argValues<A, K extends keyof A & string>(
  arg: Arg<A>,
  columns: readonly K[],
): Pick<A, K> {
  const values: Partial<Pick<A, K>> = {};
  for (const column of columns) values[column] = arg(column);
  return values as Pick<A, K>;
}
