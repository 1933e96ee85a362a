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
 * query is compiled once for each engine it runs on, and its builder is told which one.
 */
import {
  type Compilable,
  type CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";
import { type Engine, engineOf } from "./engine.ts";
import type { DB } from "./schema.ts";

/** Kysely instances that only build and compile queries for one engine (they cannot run them). */
const builders: Record<Engine, Kysely<DB>> = {
  sqlite: new Kysely<DB>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  }),
  postgres: new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  }),
};

const MARKER = "\u0000prepared:";

/** Stands for the named argument inside a prepared query's builder. */
export type Arg<A> = <K extends keyof A & string>(name: K) => A[K];

type Slot = { name: string } | { value: unknown };

/**
 * Prepares a query: `build(db, arg, engine)` is called once per engine, with `arg(name)`
 * standing for each value; `engine` lets a builder use an engine's own SQL where they differ.
 * @returns a function from the database (a Kysely instance or transaction, which decides the
 *   engine) and the arguments to the compiled query, to run with `db.executeQuery(compiled)`
 */
export function prepared<A extends Record<string, unknown>, R>(
  build: (db: Kysely<DB>, arg: Arg<A>, engine: Engine) => Compilable<R>,
): (db: Kysely<DB>, args: A) => CompiledQuery<R> {
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
    return entry;
  };
  return (db, args) => {
    const engine = engineOf(db);
    const { query, slots } = compiled[engine] ?? compile(engine);
    const parameters = slots.map((slot) => ("name" in slot ? args[slot.name] : slot.value));
    return { ...query, parameters };
  };
}
