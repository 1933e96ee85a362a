import type { Transaction } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DB } from "../src/db/schema.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { sqliteOnly } from "./pg-harness.ts";

interface HttpResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: responses are inspected field by field.
  body: any;
  text: string;
  replayed: string | null;
}

describe("concurrency over a real HTTP server", () => {
  let t: TestLedger;
  let base: string;
  beforeEach(async () => {
    t = await makeLedger();
    base = await t.listen();
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  const http = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<HttpResult> => {
    const res = await fetch(base + path, {
      method,
      headers: { "X-API-Key": t.key, "Content-Type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: JSON.parse(text),
      text,
      replayed: res.headers.get("Idempotent-Replayed"),
    };
  };
  const balanceView = async (ref: string) => {
    const res = await http("GET", `/v1/accounts/balance?accountId=${ref}`);
    expect(res.status).toBe(200);
    return res.body as { balance: number; reserved: number; available: number };
  };
  const countStatuses = (results: HttpResult[]) => {
    const counts: Record<number, number> = {};
    for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
    return counts;
  };

  it("grants exactly 6 of 20 simultaneous reservations of 75 against 500", async () => {
    await fundedAccount(t, "u1", 500);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        http("POST", "/v1/reservations/create", { accountId: "u1", amount: 75 }),
      ),
    );
    expect(countStatuses(results)).toEqual({ 200: 6, 402: 14 });
    for (const r of results.filter((x) => x.status === 402)) {
      expect(r.body.error.code).toBe("INSUFFICIENT_CREDITS");
      expect(r.body.error.details).toEqual({ available: 50, requested: 75 });
    }
    expect(await balanceView("u1")).toEqual(
      expect.objectContaining({ balance: 500, reserved: 450, available: 50 }),
    );
    const list = await http("GET", "/v1/reservations?accountId=u1&activeOnly=true");
    expect(list.body.reservations).toHaveLength(6);
  });

  it("lets exactly 100 of 300 simultaneous deductions of 1 through from 100", async () => {
    await fundedAccount(t, "u1", 100);
    const results = await Promise.all(
      Array.from({ length: 300 }, () =>
        http("POST", "/v1/accounts/credits/deduct", { accountId: "u1", amount: 1 }),
      ),
    );
    expect(countStatuses(results)).toEqual({ 200: 100, 402: 200 });
    const balances = results.filter((r) => r.status === 200).map((r) => r.body.balance as number);
    // Each success saw a distinct balance: 99, 98, …, 0.
    expect([...balances].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect((await balanceView("u1")).balance).toBe(0);
    const txs = await http("GET", "/v1/transactions?accountId=u1&limit=1");
    expect(txs.body.pagination.totalCount).toBe(101);
  });

  it("applies 10 simultaneous requests with one Idempotency-Key once", async () => {
    await fundedAccount(t, "u1", 100);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        http(
          "POST",
          "/v1/accounts/credits/deduct",
          { accountId: "u1", amount: 30 },
          { "Idempotency-Key": "same-key" },
        ),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => r.text)).size).toBe(1);
    expect(results[0]?.body).toMatchObject({ success: true, balance: 70, deducted: 30 });
    expect(results.filter((r) => r.replayed === null)).toHaveLength(1);
    expect(results.filter((r) => r.replayed === "true")).toHaveLength(9);
    expect((await balanceView("u1")).balance).toBe(70);
    const txs = await http("GET", "/v1/transactions?accountId=u1");
    expect(txs.body.pagination.totalCount).toBe(2);
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
      if (kind === 0) {
        ops.push(async () => {
          const r = await http("POST", "/v1/accounts/credits/add", { accountId: id, amount });
          expect(r.status).toBe(200);
          move(id, micros);
        });
      } else if (kind === 1) {
        ops.push(async () => {
          const r = await http("POST", "/v1/accounts/credits/deduct", { accountId: id, amount });
          expect([200, 402]).toContain(r.status);
          if (r.status === 200) move(id, -micros);
        });
      } else {
        const confirmIt = kind === 2;
        const actual = (rand(6000) + 0) / 100; // may exceed the hold
        ops.push(async () => {
          const r = await http("POST", "/v1/reservations/create", { accountId: id, amount });
          expect([200, 402]).toContain(r.status);
          if (r.status !== 200) return;
          const reservationId = r.body.reservation.id;
          if (confirmIt) {
            const c = await http("POST", "/v1/reservations/confirm", {
              reservationId,
              actualAmount: actual,
            });
            expect([200, 402]).toContain(c.status);
            if (c.status === 200) move(id, -Math.round(actual * 1e6));
            else {
              const x = await http("POST", "/v1/reservations/cancel", { reservationId });
              expect(x.status).toBe(200);
            }
          } else {
            const x = await http("POST", "/v1/reservations/cancel", { reservationId });
            expect(x.status).toBe(200);
            expect(x.body.amountReleased).toBe(amount);
          }
        });
      }
    }
    await Promise.all(ops.map((op) => op()));

    expect(await t.verify()).toEqual([]);
    for (const id of accounts) {
      const view = await balanceView(id);
      expect(Math.round(view.balance * 1e6)).toBe(expected.get(id));
      expect(view.reserved).toBe(0);
      expect(view.reserved).toBeLessThanOrEqual(view.balance);
      expect(view.balance).toBeGreaterThanOrEqual(0);
      const txs = await http("GET", `/v1/transactions?accountId=${id}&limit=500`);
      expect(txs.body.pagination.hasMore).toBe(false);
      let sum = 0;
      for (const tx of txs.body.items as Array<{ type: string; amount: number }>) {
        sum += (tx.type === "credit" ? 1 : -1) * Math.round(tx.amount * 1e6);
      }
      expect(sum).toBe(expected.get(id));
      expect(Math.round((txs.body.items[0]?.balanceAfter ?? 0) * 1e6)).toBe(expected.get(id));
    }
  });
});

describe.runIf(sqliteOnly)("write queue group commit (SQLite only: its serial queue)", () => {
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
        await trx.insertInto("projects").values({ id: name, name, created_at_ms: nowMs }).execute();
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
});
