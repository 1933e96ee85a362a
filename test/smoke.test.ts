import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeLedger, type TestLedger } from "./harness.ts";

describe("smoke", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  it("adds 0.1 and 0.2 to read back 0.3", async () => {
    await t.api("POST", "/v1/accounts/create", { body: { externalId: "u1" } });
    await t.api("POST", "/v1/accounts/credits/add", { body: { accountId: "u1", amount: 0.1 } });
    await t.api("POST", "/v1/accounts/credits/add", { body: { accountId: "u1", amount: 0.2 } });
    const res = await t.api("GET", "/v1/accounts/balance?externalId=u1");
    expect(res.status).toBe(200);
    expect(res.body.balance).toBe(0.3);
    expect(await t.verify()).toEqual([]);
  });
});
