/**
 * Which database a command uses (docs/operations.md#command-line): named on standard error by
 * every command that reads or writes it (a file's absolute path, PostgreSQL's host, port and
 * database, a remote libSQL server's host; never a password or token), and the rule that only
 * `serve`, `migrate`, `keys create` and `restore` create a missing embedded database file
 * (contract section 22; `restore` only when it succeeds, src/backup/restore.ts).
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { filePathOf } from "../db/client.ts";
import { isPostgresUrl } from "../db/postgres.ts";

/** A command refused before it touched anything; the CLI prints its message and exits 1. */
export class CliError extends Error {
  override name = "CliError";
}

/** The database of `url` in words, without credentials or query parameters. */
export function describeDatabase(url: string): string {
  const path = filePathOf(url);
  if (path === ":memory:") return "in-memory SQLite database";
  if (path !== null) return `SQLite file ${resolve(path)}`;
  if (!URL.canParse(url)) return "a database whose URL cannot be parsed";
  const parsed = new URL(url);
  if (isPostgresUrl(url)) {
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || parsed.username;
    return `PostgreSQL database ${database} at ${parsed.hostname}:${parsed.port || "5432"}`;
  }
  return `remote libSQL database at ${parsed.host}`;
}

/**
 * Names the database on standard error and, unless the command may create it (`create`),
 * refuses a missing embedded database file before anything opens it.
 * @throws CliError naming the file when it does not exist and `create` is false
 */
export function announceDatabase(url: string, options: { create: boolean }): void {
  process.stderr.write(`ledger: database: ${describeDatabase(url)}\n`);
  const path = filePathOf(url);
  if (options.create || path === null || path === ":memory:") return;
  const file = resolve(path);
  if (!existsSync(file)) {
    throw new CliError(
      `no database file at ${file} (DATABASE_URL); nothing was created. Check the folder ` +
        "and DATABASE_URL, or create it with `ledger migrate`",
    );
  }
}
