import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

describe("smoke", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  it("adds 0.1 and 0.2 to read back 0.3", async () => {
    await t.call(accountRoutes.create, { body: { externalId: "u1" } });
    await t.call(ledgerRoutes.add, { body: { accountId: "u1", amount: 0.1 } });
    await t.call(ledgerRoutes.add, { body: { accountId: "u1", amount: 0.2 } });
    const res = await t.call(accountRoutes.balance, { query: { externalId: "u1" } });
    expect(res.balance).toBe(0.3);
    expect(await t.verify()).toEqual([]);
  });
});
