/**
 * The probe write of `WriteHealth` (write-health.ts): a write unit that changes nothing the
 * ledger keeps, run by each engine's write path while the database cannot write, until it
 * succeeds (docs/design.md, "When the database cannot write").
 */
import { sql } from "kysely";
import type { Engine } from "./engine.ts";
import { inSavepoint } from "./savepoint.ts";
import type { WriteUnit } from "./write-path.ts";

/**
 * The write `WriteHealth` probes with: it changes nothing the ledger keeps, yet makes the
 * database take new space (and so fails while it cannot).
 * - SQLite rewrites the header's `user_version` with its own value (an UPDATE to the same value
 *   would be skipped by SQLite), which appends a page to the WAL at commit.
 * - PostgreSQL creates a one-row temporary table, dropped at commit: its file is extended in
 *   the database's tablespace, which a full disk refuses (an update of an existing row would
 *   fit in a page that has room, and prove nothing). Where the role may not create temporary
 *   tables, it writes a new version of the row Kysely's migrator keeps in
 *   `kysely_migration_lock` instead (the migrator locks with an advisory lock and never reads
 *   the row's value).
 */
export function probeWrite(engine: Engine): WriteUnit<void> {
  if (engine === "postgres") {
    return async (trx) => {
      const created = await inSavepoint(trx, "probe", () =>
        sql`CREATE TEMPORARY TABLE ledger_write_probe ON COMMIT DROP AS SELECT repeat('x', 100) AS filler`.execute(
          trx,
        ),
      );
      if (created.ok) return;
      await sql`UPDATE kysely_migration_lock SET is_locked = is_locked WHERE id = 'migration_lock'`.execute(
        trx,
      );
    };
  }
  return async (trx) => {
    const { rows } = await sql<{ user_version: number }>`PRAGMA user_version`.execute(trx);
    const version = Number(rows[0]?.user_version ?? 0);
    await sql.raw(`PRAGMA user_version = ${Math.trunc(version)}`).execute(trx);
  };
}
