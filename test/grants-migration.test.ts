/**
 * Migration 0002 on a database built by the previous version (docs/api.md#grants): a database
 * with migration 0001 only, filled by SQL as the previous code left it (balances, a non-rolling
 * plan's unspent bucket), then migrated: per account one grant of the balance with priority 50
 * and no expiry, except the unspent part of the plan grant, which keeps priority 0 and expires
 * at the end of its period; `ledger verify` passes, and the ledger runs on from there.
 *
 * Migration 0004 on a database built up to 0003: what remains of each grant moves to
 * `credit_grant_remaining`, grants with nothing left get `exhausted` = 1, and the database keeps
 * 0 ≤ remaining ≤ amount and the flag from then on (docs/design.md#grant-indexes).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Kysely, sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import { openDatabase } from "../src/db/client.ts";
import { migrateToLatest, migrationsDirOf, readMigrationFiles } from "../src/db/migrator.ts";
import type { DB, TransactionType } from "../src/db/schema.ts";
import { runGrantPlans } from "../src/jobs/grant-plans.ts";
import { grantsWithRemaining } from "../src/ledger/grants.ts";
import { listGrantsResponse } from "../src/ledger/schemas.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { openLedger } from "../src/runtime.ts";
import { listTransactionsResponse } from "../src/transactions/schemas.ts";
import { freshDatabase, TEST_ENGINE } from "./pg-harness.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const DAY = 86_400_000;
const M = 1_000_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Appends ledger rows to an account of the old schema, with their balanceAfter chain. */
async function ledgerRows(
  db: Kysely<DB>,
  accountId: string,
  rows: [TransactionType, number, string?][],
): Promise<string[]> {
  let balance = 0;
  const ids: string[] = [];
  for (const [i, [type, credits, source]] of rows.entries()) {
    balance += (type === "credit" ? 1 : -1) * credits * M;
    const id = `txn_OLD${accountId.slice(-3)}${String(i).padStart(19, "0")}`;
    ids.push(id);
    await db
      .insertInto("transactions")
      .values({
        id,
        project_id: "prj_OLD",
        account_id: accountId,
        type,
        amount_micros: credits * M,
        balance_after_micros: balance,
        description: "",
        metadata: "{}",
        source: source === "plan_grant" ? "plan_grant" : type === "credit" ? "add" : "deduct",
        reservation_id: null,
        account_plan_id: source === "plan_grant" ? "ap_OLD" : null,
        created_at_ms: T0 + i,
      })
      .execute();
  }
  return ids;
}

async function account(db: Kysely<DB>, id: string, balanceCredits: number, bucketCredits = 0) {
  await db
    .insertInto("accounts")
    .values({
      id,
      project_id: "prj_OLD",
      external_id: id.toLowerCase(),
      name: "",
      email: "",
      metadata: null,
      balance_micros: balanceCredits * M,
      plan_bucket_micros: bucketCredits * M,
      plan_bucket_account_plan_id: bucketCredits > 0 ? "ap_OLD" : null,
      created_at_ms: T0,
      updated_at_ms: T0 + 10,
    })
    .execute();
}

/**
 * A fresh database of the previous version (migration 0001 only), filled as its code left it;
 * dropped after the test. @returns it opened, its URL, and the id of its plan grant's credit
 */
async function oldDatabase() {
  const dir = mkdtempSync(join(tmpdir(), "ledger-migration-"));
  const database = await freshDatabase(dir);
  cleanups.push(async () => {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const url = database.url;
  const db = await openDatabase({
    url,
    authToken: database.env.DATABASE_AUTH_TOKEN,
    driver: "auto",
    synchronous: "NORMAL",
  });
  const init = readFileSync(join(migrationsDirOf(TEST_ENGINE), "0001_init.sql"), "utf8");
  expect(await migrateToLatest(db.write, { "0001_init.sql": init })).toEqual(["0001_init"]);
  const w = db.write;
  await w
    .insertInto("projects")
    .values({ id: "prj_OLD", name: "old", created_at_ms: T0 })
    .execute();
  // Purchased credits, partly spent.
  await account(w, "acc_OLDAAA", 75);
  await ledgerRows(w, "acc_OLDAAA", [
    ["credit", 100],
    ["debit", 25],
  ]);
  // Everything spent: no grant.
  await account(w, "acc_OLDBBB", 0);
  await ledgerRows(w, "acc_OLDBBB", [
    ["credit", 10],
    ["debit", 10],
  ]);
  // A non-rolling daily plan of 100: 40 purchased, the grant, 30 spent from the grant first.
  await w
    .insertInto("plans")
    .values({
      id: "plan_OLD",
      project_id: "prj_OLD",
      name: "Daily",
      description: "",
      credits_micros: 100 * M,
      price_micros: 0,
      billing_period: "1d",
      interval: "1d",
      occurrences: null,
      accumulate: 0,
      is_active: 1,
      created_at_ms: T0,
      updated_at_ms: T0,
    })
    .execute();
  await account(w, "acc_OLDCCC", 110, 70);
  await w
    .insertInto("account_plans")
    .values({
      id: "ap_OLD",
      project_id: "prj_OLD",
      account_id: "acc_OLDCCC",
      plan_id: "plan_OLD",
      active: 1,
      start_mode: "immediate",
      started_at_ms: T0,
      anchor_at_ms: T0,
      grants_made: 1,
      next_grant_at_ms: T0 + DAY,
      expires_at_ms: null,
      cancelled_at_ms: null,
      ended_at_ms: null,
      end_reason: null,
      created_at_ms: T0,
    })
    .execute();
  const [, grantTxn] = await ledgerRows(w, "acc_OLDCCC", [
    ["credit", 40],
    ["credit", 100, "plan_grant"],
    ["debit", 30],
  ]);
  await w
    .insertInto("plan_grants")
    .values({
      account_plan_id: "ap_OLD",
      period_index: 0,
      due_at_ms: T0,
      transaction_id: grantTxn ?? "",
      granted_at_ms: T0 + 1,
    })
    .execute();
  return { db, env: database.env, grantTxn: grantTxn ?? "" };
}

it("turns balances and the plan bucket into grants; verify passes; the ledger runs on", async () => {
  const { db, grantTxn, env } = await oldDatabase();
  try {
    const applied = await migrateToLatest(db.write);
    expect(applied[0]).toBe("0002_grants");
    const grants = await grantsWithRemaining(db.write)
      .selectAll("g")
      .select("r.remaining_micros")
      .orderBy("g.seq")
      .execute();
    expect(
      grants.map((g) => [
        g.account_id,
        g.amount_micros / M,
        g.remaining_micros / M,
        g.priority,
        g.expires_at_ms,
        g.transaction_id,
        g.account_plan_id,
      ]),
    ).toEqual([
      ["acc_OLDAAA", 75, 75, 50, null, null, null],
      ["acc_OLDCCC", 40, 40, 50, null, null, null],
      ["acc_OLDCCC", 100, 70, 0, T0 + DAY, grantTxn, "ap_OLD"],
    ]);
    // Ids made from the account's id (balance) and the plan grant's transaction id (bucket).
    expect(grants.map((g) => g.id)).toEqual([
      "grt_OLDAAA",
      "grt_OLDCCC",
      `grt_${grantTxn.slice(4)}`,
    ]);
    const buckets = await db.write
      .selectFrom("accounts")
      .select(["plan_bucket_micros", "plan_bucket_account_plan_id"])
      .execute();
    expect(buckets.every((b) => b.plan_bucket_micros === 0)).toBe(true);
    expect(buckets.every((b) => b.plan_bucket_account_plan_id === null)).toBe(true);
    expect((await verifyLedger(db.read, T0 + DAY / 2)).problems).toEqual([]);
  } finally {
    await db.close();
  }

  // The service on the migrated database: the plan period ends, what is left of the old grant
  // expires before the next grant, and debits spend the new plan grant first.
  let now = T0 + DAY;
  const ledger = await openLedger(loadConfig(env), { clock: () => now });
  cleanups.unshift(() => ledger.close());
  const { apiKey } = await createProjectKey(ledger.queue, "migrated");
  await ledger.db.write
    .updateTable("api_keys")
    .set({ project_id: "prj_OLD" })
    .where("project_id", "!=", "prj_OLD")
    .execute();
  const app = createApp(ledger.deps);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, path).toBe(200);
    return (await res.json()) as unknown;
  };
  expect(await runGrantPlans({ queue: ledger.queue, nowMs: now })).toMatchObject({ grants: 1 });
  const { items } = listTransactionsResponse.parse(
    await call("GET", "/v1/transactions?accountId=acc_oldccc"),
  );
  expect(items.slice(0, 2).map((x) => [x.type, x.amount, x.metadata.reason])).toEqual([
    ["credit", 100, "plan_grant"],
    ["debit", 70, "plan_credits_expired"],
  ]);
  now += 1000;
  await call("POST", "/v1/accounts/credits/deduct", { accountId: "acc_oldccc", amount: 120 });
  const listed = listGrantsResponse.parse(
    await call("GET", "/v1/accounts/grants?accountId=acc_oldccc"),
  ).grants;
  expect(listed.map((g) => [g.amount, g.remaining, g.priority, g.status])).toEqual([
    [100, 0, 0, "spent"],
    [100, 0, 0, "expired"],
    [40, 20, 50, "active"],
  ]);
  expect((await verifyLedger(ledger.db.read, now)).problems).toEqual([]);
});

it("0004 moves what remains of each grant to its own table, which the database keeps in range", async () => {
  const { db } = await oldDatabase();
  try {
    const files = await readMigrationFiles(migrationsDirOf(TEST_ENGINE));
    const upTo = (next: string) =>
      Object.fromEntries(Object.entries(files).filter(([name]) => name < next));
    const upTo3 = upTo("0004");
    expect(await migrateToLatest(db.write, upTo3)).toEqual(["0002_grants", "0003_webhooks"]);
    // The previous version spent a grant to nothing by decrementing its column.
    await sql`UPDATE credit_grants SET remaining_micros = remaining_micros - ${75 * M}
      WHERE id = 'grt_OLDAAA'`.execute(db.write);
    const state = async () =>
      (
        await grantsWithRemaining(db.write)
          .select(["g.id", "g.seq", "r.remaining_micros", "g.exhausted"])
          .orderBy("g.seq")
          .execute()
      ).map((g) => [g.id, g.remaining_micros / M, g.exhausted]);

    expect(await migrateToLatest(db.write, upTo("0005"))).toEqual(["0004_grant_remaining"]);
    const plan = (await state())[2]?.[0];
    expect(await state()).toEqual([
      ["grt_OLDAAA", 0, 1],
      ["grt_OLDCCC", 40, 0],
      [plan, 70, 0],
    ]);

    const seqOf = async (id: string) =>
      (
        await db.write
          .selectFrom("credit_grants")
          .select("seq")
          .where("id", "=", id)
          .executeTakeFirstOrThrow()
      ).seq;
    const ccc = await seqOf("grt_OLDCCC");
    const take = (credits: number) =>
      db.write
        .updateTable("credit_grant_remaining")
        .set((eb) => ({ remaining_micros: eb("remaining_micros", "-", credits * M) }))
        .where("seq", "=", ccc)
        .execute();
    // Whatever takes the last micro-credit flags the grant, in the same statement.
    await take(39);
    expect((await state())[1]).toEqual(["grt_OLDCCC", 1, 0]);
    await take(1);
    expect((await state())[1]).toEqual(["grt_OLDCCC", 0, 1]);
    // Below 0, growing again, or a new grant that does not start full: refused.
    await expect(take(1)).rejects.toThrow();
    await expect(take(-1)).rejects.toThrow(/never grows/);
    const { seq } = await db.write
      .insertInto("credit_grants")
      .values({
        id: "grt_NEW",
        project_id: "prj_OLD",
        account_id: "acc_OLDBBB",
        transaction_id: null,
        account_plan_id: null,
        amount_micros: 5 * M,
        priority: 50,
        expires_at_ms: null,
        created_at_ms: T0,
      })
      .returning("seq")
      .executeTakeFirstOrThrow();
    const start = (credits: number) =>
      db.write
        .insertInto("credit_grant_remaining")
        .values({ seq: Number(seq), remaining_micros: credits * M })
        .execute();
    await expect(start(4)).rejects.toThrow(/whole amount/);
    await start(5);
    expect((await state())[3]).toEqual(["grt_NEW", 5, 0]);

    // What the database cannot refuse, `ledger verify` reports: a flag that disagrees with what
    // remains, a grant without its remaining row.
    await db.write
      .updateTable("credit_grants")
      .set({ exhausted: 0 })
      .where("id", "=", "grt_OLDAAA")
      .execute();
    await db.write.deleteFrom("credit_grant_remaining").where("seq", "=", Number(seq)).execute();
    // `ledger verify` reads the current schema (the spend limits' counters of 0011 too): the
    // later migrations first, which leave the grants as they are.
    await migrateToLatest(db.write);
    const { problems } = await verifyLedger(db.read, T0);
    expect(problems.filter((p) => p.startsWith("grant "))).toEqual([
      "grant grt_OLDAAA: remaining 0 of amount 75, priority 50, exhausted 0",
      "grant grt_NEW: remaining missing of amount 5, priority 50, exhausted 0",
    ]);
  } finally {
    await db.close();
  }
});
