/**
 * A batch's plain debits grouped per account (docs/design.md#batches; on PostgreSQL
 * `ledger_plain_debits` of migration 0014 makes one move per account) write exactly what the
 * same operations sent one at a time write. Batches of deductions and manual debits over several
 * accounts, with operations in the middle that are not plain (a low-balance threshold crossed,
 * an insufficient balance, a grant expiry due, a first grant that runs out), and one account
 * named by id and by externalId, are compared row for row with the same operations sent as
 * single requests to another project at the same (fake) time: answers, balances, each
 * account's ledger and balanceAfter chain, grants' remaining, and the events stored for
 * webhooks. Over real HTTP, on SQLite and on PostgreSQL when LEDGER_TEST_PG_URL is set; on
 * PostgreSQL the function's own answer is checked too, since a batch whose grouped statement
 * fails runs again ungrouped and would still answer right. An independent batch with a refusal
 * commits its savepoint pass, which groups its plain debits too; the batches where every
 * operation succeeds (independent and atomic) commit the first pass.
 */
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../src/webhooks/outbox.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { TEST_ENGINE } from "./pg-harness.ts";

const HOUR = 3_600_000;
const DEDUCT = "/v1/accounts/credits/deduct";
const MANUAL = "/v1/transactions/create";

interface Reply {
  status: number;
  body: unknown;
}
interface Op {
  path: string;
  body: Record<string, unknown>;
}

/** The accounts of each project, and how each is funded: [externalId, credits, options]. */
const FUNDING: [string, number, Record<string, unknown>][] = [
  ["ada", 100, {}],
  ["bob", 50, {}],
  ["cyd", 30, { expiresAt: "2026-05-01T01:00:00.000Z" }],
  ["cyd", 10, {}],
  ["dee", 5, {}],
  ["eve", 20, {}],
  ["fay", 5, {}],
  ["fay", 5, {}],
];

describe("a batch's plain debits grouped per account", () => {
  let t: TestLedger;
  let base: string;
  beforeEach(async () => {
    t = await makeLedger({ fakeClock: "2026-05-01T00:00:00Z" });
    base = await t.listen();
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  const post = async (key: string, path: string, body: unknown): Promise<Reply> => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "X-API-Key": key, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };

  /** A project with FUNDING's accounts (ada's threshold 20), a webhook for every event. */
  const project = async (name: string) => {
    const p = await t.newProject(name);
    await post(p.key, "/v1/webhooks/create", { url: "http://127.0.0.1:9/h", events: EVENT_TYPES });
    const ids: Record<string, string> = {};
    for (const [externalId, amount, options] of FUNDING) {
      if (ids[externalId] === undefined) {
        const created = await post(p.key, "/v1/accounts/create", { externalId });
        ids[externalId] = (created.body as { account: { id: string } }).account.id;
      }
      const added = await post(p.key, "/v1/accounts/credits/add", {
        accountId: externalId,
        amount,
        ...options,
      });
      expect(added.status).toBe(200);
    }
    await post(p.key, "/v1/accounts/update", { accountId: "ada", lowBalanceThreshold: 20 });
    return { ...p, ids };
  };

  /**
   * The operations, in order; `ids` names eve by id where the op says `#eve`. Not plain: ada's
   * 45 (crosses 20), dee's 10 (402), cyd's first (its 30 expired an hour ago), fay's 1 (her
   * first grant of 5 is spent by 3 + 2: the next is drawn).
   */
  const operations = (ids: Record<string, string>): Op[] => {
    const list: [string, string, number][] = [
      [DEDUCT, "ada", 10],
      [DEDUCT, "bob", 5],
      [DEDUCT, "#eve", 2],
      [DEDUCT, "ada", 30],
      [DEDUCT, "eve", 3],
      [DEDUCT, "fay", 3],
      [MANUAL, "bob", 4.5],
      [DEDUCT, "ada", 45],
      [DEDUCT, "#eve", 1],
      [DEDUCT, "bob", 5],
      [DEDUCT, "dee", 10],
      [DEDUCT, "ada", 1],
      [DEDUCT, "fay", 2],
      [DEDUCT, "cyd", 5],
      [DEDUCT, "cyd", 1],
      [DEDUCT, "fay", 1],
      [MANUAL, "eve", 0.25],
      [DEDUCT, "eve", 13],
      [DEDUCT, "bob", 0.000001],
    ];
    return list.map(([path, who, amount], i) => {
      const accountId = who.startsWith("#") ? (ids[who.slice(1)] as string) : who;
      const body: Record<string, unknown> = { accountId, amount };
      if (path === MANUAL) Object.assign(body, { type: "debit", description: `m${i}` });
      if (i % 3 === 0) body.metadata = { i };
      return { path, body };
    });
  };

  /** The project's rows and `answers`, its ids replaced by stable names. */
  const snapshot = async (projectId: string, ids: Record<string, string>, answers: unknown) => {
    const db = t.ledger.db.read;
    const txns = await db
      .selectFrom("transactions as t")
      .innerJoin("accounts as a", "a.id", "t.account_id")
      .select(["t.id", "a.external_id", "t.type", "t.amount_micros", "t.balance_after_micros"])
      .select(["t.description", "t.metadata", "t.source", "t.created_at_ms"])
      .where("t.project_id", "=", projectId)
      .orderBy("t.seq")
      .execute();
    const accounts = await db
      .selectFrom("accounts")
      .select(["external_id", "balance_micros", "updated_at_ms", "low_balance_threshold_micros"])
      .where("project_id", "=", projectId)
      .orderBy("external_id")
      .execute();
    const grants = await db
      .selectFrom("credit_grants as g")
      .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq")
      .innerJoin("accounts as a", "a.id", "g.account_id")
      .select(["a.external_id", "g.amount_micros", "r.remaining_micros", "g.expires_at_ms"])
      .select(["g.expiry_booked", "g.exhausted"])
      .where("g.project_id", "=", projectId)
      .orderBy("g.seq")
      .execute();
    const events = await db
      .selectFrom("webhook_events")
      .select(["type", "payload", "created_at_ms"])
      .where("project_id", "=", projectId)
      .orderBy("created_at_ms")
      .orderBy("id")
      .execute();
    const names = new Map<string, string>();
    for (const [ext, id] of Object.entries(ids)) names.set(id, `acc:${ext}`);
    for (const [k, row] of txns.entries()) names.set(row.id, `txn#${k}`);
    names.set(projectId, "project");
    const text = JSON.stringify({ answers, txns, accounts, grants, events }).replace(
      /[a-z]{3}_[0-9A-HJKMNP-TV-Z]{26}/g,
      (id) => names.get(id) ?? `${id.slice(0, 3)}_*`,
    );
    return JSON.parse(text) as { answers: unknown; txns: { balance_after_micros: unknown }[] };
  };

  /** `ops` as single requests on one project and as one batch on another: both snapshots. */
  const both = async (atomic: boolean, pick: (ops: Op[]) => Op[]) => {
    const solo = await project("solo");
    const grouped = await project("grouped");
    t.advance(2 * HOUR);
    const singles: Reply[] = [];
    for (const op of pick(operations(solo.ids)))
      singles.push(await post(solo.key, op.path, op.body));
    const batch = await post(grouped.key, "/v1/batch", {
      atomic,
      operations: pick(operations(grouped.ids)),
    });
    expect(batch.status).toBe(200);
    const results = (batch.body as { results: { status: number; body: unknown }[] }).results;
    const answers = results.map((r) => ({ status: r.status, body: r.body }));
    return {
      singles: await snapshot(solo.projectId, solo.ids, singles),
      batch: await snapshot(grouped.projectId, grouped.ids, answers),
      statuses: answers.map((a) => a.status),
      committed: (batch.body as { committed: number }).committed,
    };
  };

  const noRefusal = (ops: Op[]) => ops.filter((op) => op.body.accountId !== "dee");

  it("independent: writes what the operations one at a time write, row for row", async () => {
    // Every operation succeeds, so the first pass (grouped on PostgreSQL) is the one committed.
    const done = await both(false, noRefusal);
    expect(done.statuses).toEqual(Array(18).fill(200));
    expect(done.committed).toBe(18);
    expect(done.batch).toEqual(done.singles);
    // The cases are reached: the event, the expiry booked, fay's second grant drawn.
    const text = JSON.stringify(done.batch);
    expect(text).toContain("balance.low");
    expect(text).toContain("credits.expired");
    expect(done.batch.txns.length).toBeGreaterThan(20);
  });

  it("independent with a 402 in the middle: the same, the 402 answered as alone", async () => {
    // The refusal ends the first pass; the batch runs again with a savepoint per operation
    // (its runs of plain debits grouped as in the first pass).
    const done = await both(false, (ops) => ops);
    const statuses = Array(19).fill(200);
    statuses[10] = 402;
    expect(done.statuses).toEqual(statuses);
    expect(done.committed).toBe(18);
    expect(done.batch).toEqual(done.singles);
  });

  it("atomic: the same", async () => {
    const done = await both(true, noRefusal);
    expect(done.statuses).toEqual(Array(18).fill(200));
    expect(done.committed).toBe(18);
    expect(done.batch).toEqual(done.singles);
  });

  it.runIf(TEST_ENGINE === "postgres")(
    "ledger_plain_debits answers one row per call: the leading ones applied, then 'other'",
    async () => {
      const p = await project("direct");
      const db = t.ledger.db.write;
      const now = t.now();
      const eve = p.ids.eve as string;
      // eve by id and by externalId, ada's third crosses her threshold (100 − 10 − 30 − 45).
      const calls: [string, boolean, number][] = [
        ["ada", false, 10_000_000],
        [eve, true, 2_000_000],
        ["bob", false, 5_000_000],
        ["eve", false, 3_000_000],
        ["ada", false, 30_000_000],
        [eve, true, 1_000_000],
        ["ada", false, 45_000_000],
        ["bob", false, 1_000_000],
      ];
      const txnIds = calls.map((_, i) => `txn_direct${i}`);
      const { rows } = await sql<{
        idx: number;
        outcome: string;
        account_id: string | null;
        external_id: string | null;
        balance_after_micros: string | null;
        seq: string | null;
      }>`SELECT * FROM ledger_plain_debits(${p.projectId}, ${calls.map((c) => c[0])}::text[],
          ${calls.map((c) => c[1])}::boolean[], ${calls.map((c) => c[2])}::bigint[], ${now},
          ${txnIds}::text[], ${calls.map(() => "d")}::text[], ${calls.map(() => "{}")}::text[],
          ${calls.map(() => "deduct")}::text[])`.execute(db);
      expect(
        rows.map((r) => [r.idx, r.outcome, r.external_id, Number(r.balance_after_micros)]),
      ).toEqual([
        [1, "applied", "ada", 90_000_000],
        [2, "applied", "eve", 18_000_000],
        [3, "applied", "bob", 45_000_000],
        [4, "applied", "eve", 15_000_000],
        [5, "applied", "ada", 60_000_000],
        [6, "applied", "eve", 14_000_000],
        [7, "other", null, 0],
      ]);
      const seqs = rows.slice(0, 6).map((r) => Number(r.seq));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      const balances = await db
        .selectFrom("accounts")
        .select(["external_id", "balance_micros"])
        .where("project_id", "=", p.projectId)
        .where("external_id", "in", ["ada", "bob", "eve"])
        .orderBy("external_id")
        .execute();
      expect(balances.map((b) => [b.external_id, Number(b.balance_micros)])).toEqual([
        ["ada", 60_000_000],
        ["bob", 45_000_000],
        ["eve", 14_000_000],
      ]);
      const stored = await db
        .selectFrom("transactions")
        .select(["id", "balance_after_micros"])
        .where("id", "in", txnIds)
        .orderBy("seq")
        .execute();
      expect(stored.map((s) => s.id)).toEqual(txnIds.slice(0, 6));
    },
  );
});
