/**
 * Migration 0017 on a database built up to 0016 (docs/design.md#spend-limits), on each engine:
 * an account's spend counters move from rows of `spend_windows` to the slots of its own row.
 * Slot i is the i-th distinct (period, time zone) of its limits, in their order, and takes that
 * pair's latest window; a pair without a row keeps an empty slot; `spend_windows` is dropped,
 * and the counters check of `ledger verify` passes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Kysely, sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { openDatabase } from "../src/db/client.ts";
import { migrateToLatest, migrationsDirOf, readMigrationFiles } from "../src/db/migrator.ts";
import type { DB } from "../src/db/schema.ts";
import { counterProblems } from "../src/limits/counters.ts";
import { computeWindow } from "../src/limits/windows.ts";
import { freshDatabase, TEST_ENGINE } from "./pg-harness.ts";

const M = 1_000_000;
const NOW = Date.parse("2026-11-27T10:20:00Z");
const HOUR = 3_600_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A database migrated up to 0016, dropped after the test. */
async function databaseAt0016() {
  const dir = mkdtempSync(join(tmpdir(), "ledger-migration-"));
  const database = await freshDatabase(dir);
  const db = await openDatabase({
    url: database.url,
    authToken: database.env.DATABASE_AUTH_TOKEN,
    driver: "auto",
    synchronous: "NORMAL",
  });
  cleanups.push(async () => {
    await db.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const files = await readMigrationFiles(migrationsDirOf(TEST_ENGINE));
  const upTo = Object.fromEntries(Object.entries(files).filter(([name]) => name < "0017"));
  await migrateToLatest(db.write, upTo);
  return db.write;
}

/** A debit of `credits` booked at `atMs` on `accountId`, as any spending debit is stored. */
async function debit(db: Kysely<DB>, accountId: string, n: number, credits: number, atMs: number) {
  await db
    .insertInto("transactions")
    .values({
      id: `txn_MIG${accountId.slice(-3)}${String(n).padStart(19, "0")}`,
      project_id: "prj_MIG",
      account_id: accountId,
      type: "debit",
      amount_micros: credits * M,
      balance_after_micros: 0,
      description: "",
      metadata: "{}",
      source: "deduct",
      reservation_id: null,
      account_plan_id: null,
      created_at_ms: atMs,
    })
    .execute();
}

/** A `spend_windows` row as 0011–0016 kept it. */
async function counter(
  db: Kysely<DB>,
  accountId: string,
  period: "hour" | "day" | "month",
  timeZone: string,
  atMs: number,
  credits: number,
) {
  const { startMs, endMs } = computeWindow(atMs, period, timeZone);
  await sql`INSERT INTO spend_windows (account_id, period, time_zone, window_start_ms,
      window_end_ms, spent_micros)
    VALUES (${accountId}, ${period}, ${timeZone}, ${startMs}, ${endMs}, ${credits * M})`.execute(
    db,
  );
  return startMs;
}

it("0017 moves each account's spend counters into its row", async () => {
  const db = await databaseAt0016();
  await db
    .insertInto("projects")
    .values({ id: "prj_MIG", name: "mig", created_at_ms: NOW, credits_per_usd_micros: null })
    .execute();
  // Day UTC (twice: hard and soft), hour UTC and month in Paris: three distinct pairs, in that order.
  const limits = JSON.stringify([
    { period: "day", amountMicros: 100 * M, timeZone: "UTC", soft: false },
    { period: "hour", amountMicros: 20 * M, timeZone: "UTC", soft: false },
    { period: "day", amountMicros: 80 * M, timeZone: "UTC", soft: true },
    { period: "month", amountMicros: 500 * M, timeZone: "Europe/Paris", soft: false },
  ]);
  for (const [id, spendLimits] of [
    ["acc_MIGAAA", limits],
    ["acc_MIGBBB", null],
  ] as const) {
    await db
      .insertInto("accounts")
      .values({
        id,
        project_id: "prj_MIG",
        external_id: id.toLowerCase(),
        name: "",
        email: "",
        metadata: null,
        plan_bucket_account_plan_id: null,
        created_at_ms: NOW - 3 * 86_400_000,
        updated_at_ms: NOW,
        low_balance_threshold_micros: null,
        spend_limits: spendLimits,
      })
      .execute();
  }
  // Yesterday 7 credits, an hour ago 5, in this hour 3: the month's row is missing (limits set
  // after those debits would have rebuilt it; here it stands for a pair with no row).
  await debit(db, "acc_MIGAAA", 1, 7, NOW - 86_400_000);
  await debit(db, "acc_MIGAAA", 2, 5, NOW - HOUR);
  await debit(db, "acc_MIGAAA", 3, 3, NOW);
  await counter(db, "acc_MIGAAA", "day", "UTC", NOW - 86_400_000, 7);
  const day = await counter(db, "acc_MIGAAA", "day", "UTC", NOW, 8);
  await counter(db, "acc_MIGAAA", "hour", "UTC", NOW - HOUR, 5);
  const hour = await counter(db, "acc_MIGAAA", "hour", "UTC", NOW, 3);

  // 0017 first, then the migrations after it (0018 adds reversals, which the counters' check of
  // `ledger verify` reads).
  expect((await migrateToLatest(db))[0]).toBe("0017_spend_slots");
  await expect(sql`SELECT 1 FROM spend_windows`.execute(db)).rejects.toThrow(/spend_windows/);
  const slots = await db
    .selectFrom("accounts")
    .select(["id", "sw0_start_ms", "sw0_spent_micros", "sw1_start_ms", "sw1_spent_micros"])
    .select(["sw2_start_ms", "sw2_spent_micros", "sw3_start_ms", "sw3_spent_micros"])
    .orderBy("id")
    .execute();
  const empty = {
    sw0_start_ms: null,
    sw0_spent_micros: null,
    sw1_start_ms: null,
    sw1_spent_micros: null,
    sw2_start_ms: null,
    sw2_spent_micros: null,
    sw3_start_ms: null,
    sw3_spent_micros: null,
  };
  expect(slots).toEqual([
    {
      ...empty,
      id: "acc_MIGAAA",
      sw0_start_ms: day,
      sw0_spent_micros: 8 * M,
      sw1_start_ms: hour,
      sw1_spent_micros: 3 * M,
    },
    { ...empty, id: "acc_MIGBBB" },
  ]);
  expect(await counterProblems(db)).toEqual([]);
});

it("verify finds a slot that is not a window of its limits, or does not start a window", async () => {
  const db = await databaseAt0016();
  await migrateToLatest(db);
  await db
    .insertInto("projects")
    .values({ id: "prj_MIG", name: "mig", created_at_ms: NOW, credits_per_usd_micros: null })
    .execute();
  const hourLimit = JSON.stringify([
    { period: "hour", amountMicros: 20 * M, timeZone: "Asia/Kolkata", soft: false },
  ]);
  const { startMs } = computeWindow(NOW, "hour", "Asia/Kolkata");
  await db
    .insertInto("accounts")
    .values({
      id: "acc_MIGCCC",
      project_id: "prj_MIG",
      external_id: "acc_migccc",
      name: "",
      email: "",
      metadata: null,
      plan_bucket_account_plan_id: null,
      created_at_ms: NOW,
      updated_at_ms: NOW,
      low_balance_threshold_micros: null,
      spend_limits: hourLimit,
      sw0_start_ms: startMs,
      sw0_spent_micros: 0,
    })
    .execute();
  expect(await counterProblems(db)).toEqual([]);
  // An hour in Kolkata starts at :30 UTC; one starting on the UTC hour is no window of it.
  await db
    .updateTable("accounts")
    .set({ sw0_start_ms: startMs - 30 * 60_000, sw1_start_ms: startMs, sw1_spent_micros: 0 })
    .execute();
  const problems = await counterProblems(db);
  expect(problems).toHaveLength(2);
  expect(problems[0]).toMatch(/spend window hour Asia\/Kolkata .*: bounds are not that window's$/);
  expect(problems[1]).toMatch(/spend counter slot 1 is not a window of its limits$/);
});
