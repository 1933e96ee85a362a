/**
 * Errors that mean the database cannot write: its disk or the database itself is full, or the
 * storage under it fails (see docs/design.md, "When the database cannot write").
 *
 * - SQLite: `SQLITE_FULL` (no space, or the page limit), `SQLITE_IOERR` and its extended codes,
 *   `SQLITE_READONLY` (e.g. a file system remounted read-only), as the drivers give them in
 *   `code` (libSQL's native driver) or `code`/`extendedCode` (@libsql/client).
 * - PostgreSQL: SQLSTATE class 53 (insufficient resources: 53100 disk_full, 53200
 *   out_of_memory, …), except 53300 too_many_connections, which is an unreachable database
 *   (src/db/postgres.ts); 58000 system_error and 58030 io_error.
 *
 * Such a write is answered 503 SERVICE_UNAVAILABLE (`CannotWriteError`), never a 500.
 */
import { ApiError } from "../errors.ts";

/** The message of the 503 a caller gets when the database cannot write. */
export const CANNOT_WRITE_MESSAGE =
  "The database cannot write (its disk or the database is full, or an I/O error); retry later with the same Idempotency-Key";

const SQLITE_CODE = /^SQLITE_(FULL|IOERR|READONLY)(_|$)/;
const PG_CODE = /^(53(?!300)\w{3}|58000|58030)$/;

/** The 503 of a write the database cannot make; `cause` is the database's own error. */
export class CannotWriteError extends ApiError {
  constructor(cause: unknown) {
    super("SERVICE_UNAVAILABLE", CANNOT_WRITE_MESSAGE);
    this.name = "CannotWriteError";
    Object.defineProperty(this, "cause", { value: cause });
  }
}

function field(err: unknown, name: string): unknown {
  return err !== null && typeof err === "object" ? Reflect.get(err, name) : undefined;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/**
 * True when `err` says the database cannot write: one of the codes above, or a
 * `CannotWriteError` made from one.
 */
export function isStorageFailure(err: unknown): boolean {
  if (err instanceof CannotWriteError) return true;
  const code = text(field(err, "code"));
  if (SQLITE_CODE.test(code) || SQLITE_CODE.test(text(field(err, "extendedCode")))) return true;
  return PG_CODE.test(code);
}

/**
 * The database's own error behind `err`, as one line for the log: `CODE: message` (the
 * extended code where the driver gives one), e.g. `SQLITE_FULL: database or disk is full` or
 * `53100: could not extend file …: No space left on device`. A `CannotWriteError` is described
 * by its cause.
 */
export function describeDatabaseError(err: unknown): string {
  const inner = err instanceof CannotWriteError ? err.cause : err;
  const code = text(field(inner, "extendedCode")) || text(field(inner, "code"));
  const message = inner instanceof Error ? inner.message : String(inner);
  return code && !message.startsWith(code) ? `${code}: ${message}` : message;
}

/** `err` as the 503 a caller sees when it is a storage failure; otherwise `err` itself. */
export function asCannotWrite(err: unknown): unknown {
  if (err instanceof CannotWriteError || !isStorageFailure(err)) return err;
  return new CannotWriteError(err);
}
