/**
 * The externalIds of the accounts an export's rows name (the CSV's `externalId` column), read
 * a page at a time and remembered for the rest of the export: an account's externalId never
 * changes once created (docs/api.md#accounts).
 */
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";

/** Most externalIds one export remembers; past it the memory starts again (bounded memory). */
const MAX_REMEMBERED = 10_000;

/** Looks up externalIds by account id, a page of ids at a time. */
export interface ExternalIds {
  /** Makes the externalIds of `accountIds` (nulls skipped) known, in one query at most. */
  load(accountIds: readonly (string | null)[]): Promise<void>;
  /** The externalId of an account `load` was given, or null for a null id. */
  of(accountId: string | null): string | null;
}

/**
 * The externalId lookup of one export of `projectId`'s rows.
 * @throws Error from `of` for an account `load` was not given (a bug)
 */
export function externalIds(db: Kysely<DB>, projectId: string): ExternalIds {
  let known = new Map<string, string>();
  return {
    async load(accountIds) {
      const named = accountIds.filter((id) => id !== null);
      let missing = new Set(named.filter((id) => !known.has(id)));
      if (missing.size === 0) return;
      if (known.size + missing.size > MAX_REMEMBERED) {
        known = new Map();
        missing = new Set(named);
      }
      const rows = await db
        .selectFrom("accounts")
        .select(["id", "external_id"])
        .where("project_id", "=", projectId)
        .where("id", "in", [...missing])
        .execute();
      for (const row of rows) known.set(row.id, row.external_id);
    },
    of(accountId) {
      if (accountId === null) return null;
      const externalId = known.get(accountId);
      if (externalId === undefined) throw new Error(`externalId of ${accountId} was not loaded`);
      return externalId;
    },
  };
}
