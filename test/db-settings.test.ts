/**
 * Every connection runs with the same PRAGMAs (docs/design.md#connection-settings): WAL,
 * synchronous FULL by default, busy_timeout and foreign keys, on both drivers and on both the
 * write and the read side.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import type { DB } from "../src/db/schema.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { sqliteOnly } from "./pg-harness.ts";

async function pragmas(db: Kysely<DB> | Transaction<DB>) {
  const read = async (name: string) =>
    Object.values((await sql.raw(`PRAGMA ${name}`).execute(db)).rows[0] as object)[0];
  return {
    journal: await read("journal_mode"),
    synchronous: await read("synchronous"),
    busyTimeout: await read("busy_timeout"),
    foreignKeys: await read("foreign_keys"),
  };
}

const FULL = { journal: "wal", synchronous: 2, busyTimeout: 5000, foreignKeys: 1 };

describe.runIf(sqliteOnly).each(["native", "client"])(
  "PRAGMAs with DATABASE_DRIVER=%s (SQLite only)",
  (driver) => {
    let t: TestLedger;
    afterEach(async () => t.close());

    it("applies them to the write transactions and the reads", async () => {
      t = await makeLedger({ env: { DATABASE_DRIVER: driver } });
      // Several batches, so a pooled connection would show up if one were used.
      for (let i = 0; i < 3; i++) {
        expect(await t.ledger.queue.run((trx) => pragmas(trx))).toEqual(FULL);
      }
      const read = await pragmas(t.ledger.db.read);
      expect(read).toMatchObject({ journal: "wal", synchronous: 2, foreignKeys: 1 });
    });

    it("honours DATABASE_SYNCHRONOUS=NORMAL", async () => {
      t = await makeLedger({ env: { DATABASE_DRIVER: driver, DATABASE_SYNCHRONOUS: "NORMAL" } });
      expect(await t.ledger.queue.run((trx) => pragmas(trx))).toEqual({ ...FULL, synchronous: 1 });
    });
  },
);
