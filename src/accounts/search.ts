/**
 * The account list's `search` filter (docs/api.md#account-list): accounts whose `externalId` or
 * `name` contains the text, ASCII letters matched in any case, on both engines (SQLite's `LIKE`
 * and PostgreSQL's `ILIKE` over `COLLATE "C"` columns fold ASCII letters only). `%`, `_` and `\`
 * in the text match themselves.
 */

import type { Kysely } from "kysely";
import { type ExpressionBuilder, sql } from "kysely";
import { engineOf } from "../db/engine.ts";
import type { DB } from "../db/schema.ts";

/** `text` as a LIKE pattern that matches it anywhere, with `\` as the escape character. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The WHERE condition of `search` on the accounts table. */
export function accountMatches(db: Kysely<DB>, text: string) {
  const like = engineOf(db) === "postgres" ? sql.raw("ILIKE") : sql.raw("LIKE");
  const pattern = containsPattern(text);
  return (eb: ExpressionBuilder<DB, "accounts">) =>
    eb.or([
      sql<boolean>`${eb.ref("external_id")} ${like} ${pattern} ESCAPE '\\'`,
      sql<boolean>`${eb.ref("name")} ${like} ${pattern} ESCAPE '\\'`,
    ]);
}
