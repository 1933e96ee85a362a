/**
 * Opens the database: an embedded libSQL file (default) or a remote libSQL/Turso URL.
 *
 * Two Kysely instances are returned: `write`, used only by the write queue, and `read`, used by
 * every read. On a file they are two connections, so reads never wait for the write queue
 * (WAL lets readers run beside the one writer). Every connection gets the same PRAGMAs.
 */
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { LibsqlDialect } from "@libsql/kysely-libsql";
import { Kysely } from "kysely";
import type LibsqlDatabase from "libsql";
import { NativeSqliteDialect } from "./native-driver.ts";
import type { DB } from "./schema.ts";

export interface DatabaseOptions {
  /** `file:PATH` or `libsql://…` / `http(s)://…`. */
  url: string;
  authToken?: string | undefined;
  /** `auto`: native for `file:` URLs, the @libsql/client driver otherwise. */
  driver: "auto" | "native" | "client";
  synchronous: "FULL" | "NORMAL";
}

export interface Database {
  write: Kysely<DB>;
  read: Kysely<DB>;
  driver: "native" | "client";
  /** PRAGMA statements every write transaction re-applies (client driver: pooled connections). */
  writePragmas: string[];
  close(): Promise<void>;
}

/** Milliseconds a connection waits for another process's write lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

/** The PRAGMAs of every connection (style.md: a pooled connection with other settings is a bug). */
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
  const require = createRequire(import.meta.url);
  const Native = require("libsql") as typeof LibsqlDatabase;
  const open = () => {
    const db = new Native(path);
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
    driver: "native",
    writePragmas: [],
    close: async () => {
      await read.destroy();
      await write.destroy();
    },
  };
}

async function openClient(options: DatabaseOptions, path: string | null): Promise<Database> {
  if (path) mkdirSync(dirname(resolve(path)), { recursive: true });
  const client = createClient({ url: options.url, authToken: options.authToken });
  const pragmas = path ? connectionPragmas(options.synchronous) : [];
  for (const pragma of pragmas) await client.execute(pragma);
  const db = new Kysely<DB>({ dialect: new LibsqlDialect({ client }) });
  return {
    write: db,
    read: db,
    driver: "client",
    // journal_mode is a property of the file; the rest are per connection, and the client pools
    // connections, so each write transaction sets them again on the connection it holds.
    writePragmas: pragmas.filter((p) => !p.includes("journal_mode") && !p.includes("foreign_keys")),
    close: async () => {
      await db.destroy();
    },
  };
}
