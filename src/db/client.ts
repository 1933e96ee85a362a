/**
 * Opens the database: an embedded libSQL file (default), a remote libSQL/Turso URL, or
 * PostgreSQL (`postgres://…`; see src/db/postgres.ts and docs/design.md, "Engines").
 *
 * Two Kysely instances are returned: `write`, used only by the write path, and `read`, used by
 * every read. On a file they are two connections, so reads never wait for the write queue
 * (WAL lets readers run beside the one writer). Every connection gets the same PRAGMAs. On
 * PostgreSQL both are the same instance over one pool of DATABASE_POOL_MAX connections.
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { LibsqlDialect } from "@libsql/kysely-libsql";
import { Kysely } from "kysely";
// A static import, so that a bundler (the single binary's) sees and embeds the native addon.
import LibsqlDatabase from "libsql";
import type { Engine } from "./engine.ts";
import { NativeSqliteDialect, TransactionalDdlSqliteAdapter } from "./native-driver.ts";
import { isPostgresUrl, openPostgres } from "./postgres.ts";
import { fetchWithTimeout, GuardedClient, type WriteDeadline } from "./remote-libsql.ts";
import type { DB } from "./schema.ts";

export interface DatabaseOptions {
  /** `file:PATH`, `libsql://…` / `http(s)://…`, or `postgres(ql)://…`. */
  url: string;
  authToken?: string | undefined;
  /** `auto`: native for `file:` URLs, pg for PostgreSQL, the @libsql/client driver otherwise. */
  driver: "auto" | "native" | "client";
  synchronous: "FULL" | "NORMAL";
  /** PostgreSQL: most connections of this process (DATABASE_POOL_MAX); default 10. */
  poolMax?: number | undefined;
  /** PostgreSQL: told about errors of idle connections (the pool drops them by itself). */
  onIdleError?: ((err: Error) => void) | undefined;
}

export interface Database {
  write: Kysely<DB>;
  read: Kysely<DB>;
  engine: Engine;
  driver: "native" | "client" | "pg";
  /**
   * Runs before each write transaction, outside it (client driver on a file: re-applies the
   * connection PRAGMAs, which SQLite refuses to change inside a transaction).
   */
  beforeWrite?: () => Promise<void>;
  /**
   * Remote libSQL: how long a write may take, and the hook by which the write queue bounds the
   * calls of its next write transactions by that (src/db/remote-libsql.ts).
   */
  writeDeadline?: WriteDeadline;
  close(): Promise<void>;
}

/** Milliseconds a connection waits for another process's write lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * The PRAGMAs of every connection, writing or reading (docs/design.md#connection-settings): a
 * pooled connection with other settings would be a bug.
 */
export function connectionPragmas(synchronous: "FULL" | "NORMAL"): string[] {
  return [
    "PRAGMA journal_mode = WAL",
    `PRAGMA synchronous = ${synchronous}`,
    `PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`,
    "PRAGMA foreign_keys = ON",
  ];
}

/** `file:./data/ledger.db` → `./data/ledger.db`; null for a remote URL. */
export function filePathOf(url: string): string | null {
  if (!url.startsWith("file:")) return null;
  const path = url.replace(/^file:(\/\/)?/, "").replace(/\?.*$/, "");
  return path.length > 0 ? path : null;
}

/**
 * Opens the database named by `options.url`, creating the file's folder when needed.
 * @throws Error when the native driver is asked for on a remote URL.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (isPostgresUrl(options.url)) {
    if (options.driver !== "auto") {
      throw new Error(`DATABASE_DRIVER=${options.driver} is for SQLite, not ${options.url}`);
    }
    const { db } = openPostgres({
      url: options.url,
      poolMax: options.poolMax ?? 10,
      ...(options.onIdleError ? { onIdleError: options.onIdleError } : {}),
    });
    return { write: db, read: db, engine: "postgres", driver: "pg", close: () => db.destroy() };
  }
  const path = filePathOf(options.url);
  const driver = options.driver === "auto" ? (path ? "native" : "client") : options.driver;
  if (driver === "native") {
    if (!path) throw new Error(`The native driver needs a file: URL, got ${options.url}`);
    return openNative(path, options.synchronous);
  }
  return openClient(options, path);
}

function openNative(path: string, synchronous: "FULL" | "NORMAL"): Database {
  mkdirSync(dirname(resolve(path)), { recursive: true });
  const open = () => {
    const db = new LibsqlDatabase(path);
    for (const pragma of connectionPragmas(synchronous)) db.exec(pragma);
    return db;
  };
  const writeConn = open();
  const readConn = open();
  const write = new Kysely<DB>({ dialect: new NativeSqliteDialect(writeConn) });
  const read = new Kysely<DB>({ dialect: new NativeSqliteDialect(readConn) });
  return {
    write,
    read,
    engine: "sqlite",
    driver: "native",
    close: async () => {
      await read.destroy();
      await write.destroy();
    },
  };
}

/** The @libsql/client dialect, with transactional migrations (TransactionalDdlSqliteAdapter). */
class ClientDialect extends LibsqlDialect {
  override createAdapter() {
    return new TransactionalDdlSqliteAdapter();
  }
}

async function openClient(options: DatabaseOptions, path: string | null): Promise<Database> {
  if (path) mkdirSync(dirname(resolve(path)), { recursive: true });
  // On a file, one connection per client, so the PRAGMAs set on it stay in force (the client
  // pools connections and opens new ones with default settings); remote databases keep the
  // client's own pooling and the server's settings, and every call is guarded: an unreachable
  // server is a 503 within seconds (src/db/remote-libsql.ts).
  const clientConfig = {
    url: options.url,
    authToken: options.authToken,
    concurrency: path ? 1 : 20,
    ...(path ? {} : { fetch: fetchWithTimeout }),
  };
  const open = () => {
    const client = createClient(clientConfig);
    return path ? client : new GuardedClient(client);
  };
  const writeClient = open();
  const readClient = open();
  const pragmas = path ? connectionPragmas(options.synchronous) : [];
  const applyPragmas = async (client: typeof writeClient) => {
    for (const pragma of pragmas) await client.execute(pragma);
  };
  await applyPragmas(writeClient);
  await applyPragmas(readClient);
  const write = new Kysely<DB>({ dialect: new ClientDialect({ client: writeClient }) });
  const read = new Kysely<DB>({ dialect: new ClientDialect({ client: readClient }) });
  return {
    write,
    read,
    engine: "sqlite",
    driver: "client",
    ...(path ? { beforeWrite: () => applyPragmas(writeClient) } : {}),
    ...(writeClient instanceof GuardedClient ? { writeDeadline: writeClient.writeDeadline } : {}),
    close: async () => {
      await read.destroy();
      await write.destroy();
      // The dialect leaves a client it was handed open; an open WebSocket would keep the
      // process alive (a CLI command that never exits).
      readClient.close();
      writeClient.close();
    },
  };
}
