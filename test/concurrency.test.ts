/**
 * Concurrency over a real HTTP server, through the typed client with the runtime's fetch
 * (test/harness.ts's `t.clientFor(key, base)`): simultaneous holds and deductions, one
 * Idempotency-Key sent ten times at once, a mixed load keeping every invariant; and the SQLite
 * write queue's group commit.
 */
import type { Transaction } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Amount, LedgerClient } from "../src/client/index.ts";
import type { DB } from "../src/db/schema.ts";
import { expectError } from "./contract.ts";
import { expectOk, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { countStatuses, expectDistinctBalances } from "./http-client.ts";
import { TEST_ENGINE } from "./pg-harness.ts";

/** What a call of the typed client resolves to. */
interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** An outcome as `{status, body}` (the body being `data` or `error`). */
const reply = (o: Outcome) => ({ status: o.response.status, body: o.data ?? o.error });

/** An amount that must be a plain number here (every amount of these tests is below 2^33). */
function num(amount: Amount | undefined): number {
  if (typeof amount !== "number") throw new Error(`not a number: ${String(amount)}`);
  return amount;
}

describe("concurrency over a real HTTP server", () => {
  let t: TestLedger;
  let client: LedgerClient;
  beforeEach(async () => {
    t = await makeLedger();
    client = t.clientFor(t.key, await t.listen());
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  /** Funds "u1" with `credits`, then makes `n` calls of `send` at once. */
  const simultaneous = async <O extends Outcome>(
    credits: number,
    n: number,
    send: () => Promise<O>,
  ) => {
    await fundedAccount(t, "u1", credits);
    return Promise.all(Array.from({ length: n }, send));
  };
  const balanceView = async (ref: string) =>
    expectOk(await client.GET("/v1/accounts/balance", { params: { query: { accountId: ref } } }));
  const txns = async (query: { accountId: string; limit?: number }) =>
    expectOk(await client.GET("/v1/transactions", { params: { query } }));

  it("grants exactly 6 of 20 simultaneous reservations of 75 against 500", async () => {
    const body = { accountId: "u1", amount: 75 };
    const outcomes = await simultaneous(500, 20, () =>
      client.POST("/v1/reservations/create", { body }),
    );
    const results = outcomes.map(reply);
    expect(countStatuses(results)).toEqual({ 200: 6, 402: 14 });
    for (const r of results.filter((x) => x.status === 402)) {
      const err = expectError(r, 402, "INSUFFICIENT_CREDITS");
      expect(err.error.details).toEqual({ available: 50, requested: 75 });
    }
    expect(await balanceView("u1")).toEqual(
      expect.objectContaining({ balance: 500, reserved: 450, available: 50 }),
    );
    const query = { accountId: "u1", activeOnly: "true" as const };
    const list = expectOk(await client.GET("/v1/reservations", { params: { query } }));
    expect(list.reservations).toHaveLength(6);
  });

  it("lets exactly 100 of 300 simultaneous deductions of 1 through from 100", async () => {
    const body = { accountId: "u1", amount: 1 };
    const outcomes = await simultaneous(100, 300, () =>
      client.POST("/v1/accounts/credits/deduct", { body }),
    );
    const results = outcomes.map(reply);
    expect(countStatuses(results)).toEqual({ 200: 100, 402: 200 });
    expectDistinctBalances(results, 100);
    expect((await balanceView("u1")).balance).toBe(0);
    expect((await txns({ accountId: "u1", limit: 1 })).pagination.totalCount).toBe(101);
  });

  it("applies 10 simultaneous requests with one Idempotency-Key once", async () => {
    await fundedAccount(t, "u1", 100);
    // The bodies as text, read by a middleware of the caller's own (openapi-fetch's `use`).
    const texts: string[] = [];
    client.use({
      async onResponse({ response }) {
        if (new URL(response.url).pathname === "/v1/accounts/credits/deduct") {
          texts.push(await response.clone().text());
        }
        return undefined;
      },
    });
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () =>
        client.POST("/v1/accounts/credits/deduct", {
          body: { accountId: "u1", amount: 30 },
          headers: { "Idempotency-Key": "same-key" },
        }),
      ),
    );
    const replayed = outcomes.map((o) => o.response.headers.get("Idempotent-Replayed"));
    expect(outcomes.map((o) => o.response.status)).toEqual(Array(10).fill(200));
    expect(texts).toHaveLength(10);
    expect(new Set(texts).size).toBe(1);
    expect(outcomes[0]?.data).toMatchObject({ success: true, balance: 70, deducted: 30 });
    for (const o of outcomes) expect(o.data).toEqual(outcomes[0]?.data);
    expect(replayed.filter((r) => r === null)).toHaveLength(1);
    expect(replayed.filter((r) => r === "true")).toHaveLength(9);
    expect((await balanceView("u1")).balance).toBe(70);
    expect((await txns({ accountId: "u1" })).pagination.totalCount).toBe(2);
  });

  it("keeps every invariant under a mixed concurrent load on 10 accounts", async () => {
    const accounts: string[] = [];
    for (let i = 0; i < 10; i++) accounts.push(await fundedAccount(t, `acct-${i}`, 200));
    // Expected balance per account in micro-credits, from the successful responses.
    const expected = new Map(accounts.map((id) => [id, 200_000_000]));
    const move = (id: string, micros: number) => expected.set(id, (expected.get(id) ?? 0) + micros);
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const ops: Array<() => Promise<void>> = [];
    for (let i = 0; i < 400; i++) {
      const id = accounts[rand(accounts.length)] as string;
      const amount = (rand(5000) + 1) / 100; // 0.01 … 50
      const micros = Math.round(amount * 1e6);
      const kind = rand(4);
      const body = { accountId: id, amount };
      if (kind === 0) {
        ops.push(async () => {
          expectOk(await client.POST("/v1/accounts/credits/add", { body }));
          move(id, micros);
        });
      } else if (kind === 1) {
        ops.push(async () => {
          const r = await client.POST("/v1/accounts/credits/deduct", { body });
          expect([200, 402]).toContain(r.response.status);
          if (r.response.status === 200) move(id, -micros);
        });
      } else {
        const confirmIt = kind === 2;
        const actual = (rand(6000) + 0) / 100; // may exceed the hold
        ops.push(async () => {
          const r = await client.POST("/v1/reservations/create", { body });
          expect([200, 402]).toContain(r.response.status);
          if (r.response.status !== 200) return;
          const reservationId = expectOk(r).reservation.id;
          const cancel = () => client.POST("/v1/reservations/cancel", { body: { reservationId } });
          if (confirmIt) {
            const c = await client.POST("/v1/reservations/confirm", {
              body: { reservationId, actualAmount: actual },
            });
            expect([200, 402]).toContain(c.response.status);
            if (c.response.status === 200) move(id, -Math.round(actual * 1e6));
            else expectOk(await cancel());
          } else {
            expect(expectOk(await cancel()).amountReleased).toBe(amount);
          }
        });
      }
    }
    await Promise.all(ops.map((op) => op()));

    expect(await t.verify()).toEqual([]);
    for (const id of accounts) {
      const view = await balanceView(id);
      expect(Math.round(num(view.balance) * 1e6)).toBe(expected.get(id));
      expect(view.reserved).toBe(0);
      expect(num(view.reserved)).toBeLessThanOrEqual(num(view.balance));
      expect(num(view.balance)).toBeGreaterThanOrEqual(0);
      const txs = await txns({ accountId: id, limit: 500 });
      expect(txs.pagination.hasMore).toBe(false);
      let sum = 0;
      for (const tx of txs.items) {
        sum += (tx.type === "credit" ? 1 : -1) * Math.round(num(tx.amount) * 1e6);
      }
      expect(sum).toBe(expected.get(id));
      expect(Math.round(num(txs.items[0]?.balanceAfter ?? 0) * 1e6)).toBe(expected.get(id));
    }
  });
});

// The serial queue runs on the embedded file and on remote libSQL alike.
describe.runIf(TEST_ENGINE === "sqlite")(
  "write queue group commit (SQLite only: its serial queue)",
  () => {
    let t: TestLedger;
    beforeEach(async () => {
      t = await makeLedger();
    });
    afterEach(async () => t.close());

    it("rolls back only the unit that throws; its neighbours in the batch commit", async () => {
      const seen: Array<Transaction<DB>> = [];
      const unit = (name: string, fail = false) =>
        t.ledger.queue.run(async (trx, nowMs) => {
          seen.push(trx);
          await trx
            .insertInto("projects")
            .values({ id: name, name, created_at_ms: nowMs })
            .execute();
          if (fail) throw new Error(`unit ${name} failed`);
          return name;
        });
      // The first unit starts a batch at once; the next ones wait and share the following one.
      const results = await Promise.allSettled([
        unit("gc-0"),
        unit("gc-1"),
        unit("gc-2"),
        unit("gc-3", true),
        unit("gc-4"),
        unit("gc-5"),
      ]);
      expect(results.map((r) => r.status)).toEqual([
        "fulfilled",
        "fulfilled",
        "fulfilled",
        "rejected",
        "fulfilled",
        "fulfilled",
      ]);
      expect((results[3] as PromiseRejectedResult).reason.message).toBe("unit gc-3 failed");
      expect((results[4] as PromiseFulfilledResult<string>).value).toBe("gc-4");
      // gc-1 … gc-5 ran in one transaction: the failing unit shared it with its neighbours.
      expect(new Set(seen.slice(1)).size).toBe(1);
      const rows = await t.ledger.db.read
        .selectFrom("projects")
        .select("id")
        .where("id", "like", "gc-%")
        .orderBy("id")
        .execute();
      expect(rows.map((r) => r.id)).toEqual(["gc-0", "gc-1", "gc-2", "gc-4", "gc-5"]);
      // The queue keeps working after a failed unit.
      await expect(unit("gc-6")).resolves.toBe("gc-6");
    });
  },
);
