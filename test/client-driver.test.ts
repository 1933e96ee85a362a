/**
 * The @libsql/client driver (used for remote libsql:// URLs) on a local file: the same flow,
 * concurrency and invariants as the default native driver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { sqliteOnly } from "./pg-harness.ts";

describe.runIf(sqliteOnly)("DATABASE_DRIVER=client (SQLite only: a libSQL driver)", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger({ env: { DATABASE_DRIVER: "client" } });
  });
  afterAll(async () => t.close());

  it("runs on @libsql/client", () => {
    expect(t.ledger.db.driver).toBe("client");
  });

  it("reserves, confirms and reads back exact balances", async () => {
    await fundedAccount(t, "c1", 10);
    const hold = await t.call(reservationRoutes.create, {
      body: { accountId: "c1", amount: 2.5, operation: "chat", model: "gpt-4o" },
    });
    const confirm = await t.call(reservationRoutes.confirm, {
      body: { reservationId: hold.reservation.id, actualAmount: 1.75 },
    });
    expect(confirm.balance).toBe(8.25);
    const balance = await t.call(accountRoutes.balance, { query: { accountId: "c1" } });
    expect(balance).toMatchObject({ balance: 8.25, reserved: 0, available: 8.25 });
  });

  it("100 concurrent deductions of 1 from 60 over real HTTP succeed exactly 60 times", async () => {
    await fundedAccount(t, "c2", 60);
    const base = await t.listen();
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        fetch(`${base}/v1/accounts/credits/deduct`, {
          method: "POST",
          headers: { "X-API-Key": t.key, "Content-Type": "application/json" },
          body: JSON.stringify({ accountId: "c2", amount: 1 }),
        }).then((r) => r.status),
      ),
    );
    expect(results.filter((s) => s === 200)).toHaveLength(60);
    expect(results.filter((s) => s === 402)).toHaveLength(40);
    const balance = await t.call(accountRoutes.balance, { query: { accountId: "c2" } });
    expect(balance.balance).toBe(0);
    expect(await t.verify()).toEqual([]);
  });
});
