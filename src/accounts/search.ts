/**
 * The account list's `search` filter (docs/api.md#account-list): accounts whose `externalId` or
 * `name` contains the text, ASCII letters matched in any case, on both engines
 * (`containsText`, src/db/text-search.ts). `%`, `_` and `\` in the text match themselves.
 */
import type { ExpressionBuilder, Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import { containsText } from "../db/text-search.ts";

/** The WHERE condition of `search` on the accounts table. */
export function accountMatches(db: Kysely<DB>, text: string) {
  const contains = containsText(db, text);
  return (eb: ExpressionBuilder<DB, "accounts">) =>
    eb.or([contains(eb.ref("external_id")), contains(eb.ref("name"))]);
}
