/**
 * Text search in a column, the same on both engines: a column contains a text, ASCII letters
 * matched in any case (SQLite's `LIKE` and PostgreSQL's `ILIKE` over `COLLATE "C"` columns fold
 * ASCII letters only). `%`, `_` and `\` in the text match themselves. Used by the account list's
 * `search` (docs/api.md#account-list).
 */
import { type Expression, type Kysely, type RawBuilder, sql } from "kysely";
import { engineOf } from "./engine.ts";
import type { DB } from "./schema.ts";

/** `text` as a LIKE pattern that matches it anywhere, with `\` as the escape character. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The condition "`column` contains `text`, ASCII letters in any case" for queries on `db`'s
 * engine: a function of the column, so that one pattern serves several columns.
 */
export function containsText(
  db: Kysely<DB>,
  text: string,
): (column: Expression<string>) => RawBuilder<boolean> {
  const like = engineOf(db) === "postgres" ? sql.raw("ILIKE") : sql.raw("LIKE");
  const pattern = containsPattern(text);
  return (column) => sql<boolean>`${column} ${like} ${pattern} ESCAPE '\\'`;
}
