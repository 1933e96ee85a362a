/**
 * The client's exact amount helpers (src/client/amounts.ts; docs/api.md#amounts-in-the-client):
 * micro-credits as `bigint` and back, comparison and sums at any number of decimals, never
 * through a double; then the same helpers on amounts the client read from the service, above
 * 2^53 micro-credits where a double would round.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addAmounts,
  compareAmounts,
  fromMicros,
  isLosslessNumber,
  LosslessNumber,
  subtractAmounts,
  toMicros,
} from "../src/client/index.ts";
import { expectOk, makeLedger, type TestLedger } from "./harness.ts";

describe("the client's amount helpers", () => {
  it("turns credits into micro-credits exactly, and refuses what is not a whole micro-credit", () => {
    expect(toMicros(25.5)).toBe(25_500_000n);
    expect(toMicros(0.000001)).toBe(1n);
    expect(toMicros(1e-6)).toBe(1n);
    expect(toMicros(0)).toBe(0n);
    expect(toMicros(-6.96)).toBe(-6_960_000n);
    expect(toMicros("12.500000000")).toBe(12_500_000n);
    expect(toMicros(1e21)).toBe(10n ** 27n);
    expect(toMicros(new LosslessNumber("8600000000.000001"))).toBe(8_600_000_000_000_001n);
    expect(toMicros(new LosslessNumber("90071992547.409931"))).toBe(90_071_992_547_409_931n);
    // 0.1 + 0.2 in doubles is 0.30000000000000004: not a whole number of micro-credits.
    expect(() => toMicros(0.1 + 0.2)).toThrow(RangeError);
    expect(() => toMicros("0.0000001")).toThrow(/not a whole number of micro-credits/);
    expect(() => toMicros(Number.NaN)).toThrow(RangeError);
    expect(() => toMicros(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => toMicros("12,5")).toThrow(/not a decimal amount/);
    expect(() => toMicros("1e999")).toThrow(/out of range/);
  });

  it("turns micro-credits back into the client's form: a number when exact, else a LosslessNumber", () => {
    expect(fromMicros(25_500_000n)).toBe(25.5);
    expect(fromMicros(1n)).toBe(0.000001);
    expect(fromMicros(0n)).toBe(0);
    expect(fromMicros(-6_960_000n)).toBe(-6.96);
    const big = fromMicros(8_600_000_000_000_001n);
    expect(isLosslessNumber(big)).toBe(true);
    expect(String(big)).toBe("8600000000.000001");
    for (const micros of [0n, 1n, 999_999n, 123_456_789_012_345_678n, -42n]) {
      expect(toMicros(fromMicros(micros))).toBe(micros);
    }
  });

  it("compares exactly, where doubles cannot tell the amounts apart", () => {
    const a = new LosslessNumber("8600000000.000001");
    const b = new LosslessNumber("8600000000.000002");
    expect(Number(a.value)).toBe(Number(b.value));
    expect(compareAmounts(a, b)).toBe(-1);
    expect(compareAmounts(b, a)).toBe(1);
    expect(compareAmounts(a, Number(a.value))).toBe(-1);
    expect(compareAmounts("1.50", 1.5)).toBe(0);
    expect(compareAmounts(0.1, "0.10000000000000001")).toBe(-1);
    expect(compareAmounts(-1, 0)).toBe(-1);
    expect(compareAmounts(1e21, "999999999999999999999.9")).toBe(1);
  });

  it("adds and subtracts exactly, at any number of decimals", () => {
    expect(addAmounts(0.1, 0.2)).toBe(0.3);
    expect(addAmounts()).toBe(0);
    expect(addAmounts(25.5, -6.96)).toBe(18.54);
    expect(subtractAmounts(25.5, 6.96)).toBe(18.54);
    const sum = addAmounts(new LosslessNumber("8599999999.999999"), 0.000002);
    expect(isLosslessNumber(sum)).toBe(true);
    expect(String(sum)).toBe("8600000000.000001");
    expect(addAmounts(new LosslessNumber("8600000000.000001"), 0.000001)).toBe(8600000000.000002);
    // USD costs carry more decimals than credits.
    expect(addAmounts(0.6, 0.59999875, 0.81)).toBe(2.00999875);
    expect(String(addAmounts("1e-12", 1))).toBe("1.000000000001");
    expect(subtractAmounts(0.3, 0.1)).toBe(0.2);
    // A result of zero at any scale is 0 (it once came out as an empty literal and threw).
    expect(subtractAmounts(0.3, 0.3)).toBe(0);
    expect(subtractAmounts("1.50", 1.5)).toBe(0);
    expect(addAmounts(-0.000001, 0.000001)).toBe(0);
    expect(
      String(subtractAmounts(new LosslessNumber("8600000000.000001"), "8600000000.000001")),
    ).toBe("0");
  });
});

describe("the amount helpers on what the client reads", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  it("sums and compares balances above 2^53 micro-credits without a digit lost", async () => {
    const accounts = ["amounts-a", "amounts-b"];
    for (const externalId of accounts) {
      expectOk(await t.client.POST("/v1/accounts/create", { body: { externalId } }));
      for (let i = 0; i < 8; i++) {
        expectOk(
          await t.client.POST("/v1/accounts/credits/add", {
            body: { accountId: externalId, amount: 1_000_000_000 },
          }),
        );
      }
    }
    // The amount is sent as a LosslessNumber made by fromMicros: its literal reaches the wire.
    const topUp = fromMicros(600_000_000_000_001n);
    expectOk(
      await t.client.POST("/v1/accounts/credits/add", {
        body: { accountId: "amounts-a", amount: topUp },
      }),
    );
    const [a, b] = await Promise.all(
      accounts.map(async (externalId) =>
        expectOk(await t.client.GET("/v1/accounts/balance", { params: { query: { externalId } } })),
      ),
    );
    if (!a || !b) throw new Error("no balance");
    expect(String(a.available)).toBe("8600000000.000001");
    expect(toMicros(a.available)).toBe(8_600_000_000_000_001n);
    expect(compareAmounts(a.available, b.available)).toBe(1);
    expect(compareAmounts(a.available, 8_600_000_000)).toBe(1);
    expect(String(addAmounts(a.balance, b.balance))).toBe("16600000000.000001");
    expect(fromMicros(toMicros(a.balance) - toMicros(b.balance))).toBe(600_000_000.000001);
    const { items } = expectOk(
      await t.client.GET("/v1/transactions", {
        params: { query: { accountId: "amounts-a", limit: 100 } },
      }),
    );
    // The ledger's amounts add up to the balance, exactly.
    expect(compareAmounts(addAmounts(...items.map((i) => i.amount)), a.balance)).toBe(0);
  });
});
