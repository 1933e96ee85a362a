/**
 * The typed client (`credit-ledger/client`, src/client; docs/api.md#typed-client): the README's
 * tour through it, in-process and against a listening server with the runtime's own fetch;
 * amounts never rounded on the way in or out; idempotency headers both ways. `npm test`
 * type-checks this file: each `@ts-expect-error` line fails `tsc` the day the mistake it shows
 * compiles (a misspelt path, a missing or mistyped field, a response field that does not exist).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Amount,
  createLedgerClient,
  type LedgerClient,
  LosslessNumber,
} from "../src/client/index.ts";
import { expectFailure, expectOk, makeLedger, type TestLedger } from "./harness.ts";

/**
 * The README's tour: the credit price, create, estimate in credits, reserve the estimate,
 * confirm with the usage, charge a usage at once, read ledger and balance. No arithmetic.
 */
async function tour(client: LedgerClient, externalId: string) {
  expectOk(await client.POST("/v1/project/update", { body: { creditsPerUsd: 100 } }));
  const created = expectOk(
    await client.POST("/v1/accounts/create", {
      body: { externalId, name: "Ada Lovelace", email: "ada@example.com" },
    }),
  );
  expectOk(
    await client.POST("/v1/accounts/credits/add", {
      body: { accountId: externalId, amount: 25.5, paymentMethod: "card" },
      headers: { "Idempotency-Key": `${externalId}-topup` },
    }),
  );
  const estimate = expectOk(
    await client.POST("/v1/models/calculate", {
      body: { modelId: "claude-sonnet-4-5", inputTokens: 9500, outputTokens: 3100 },
    }),
  );
  const amount = estimate.estimatedCostCredits;
  if (amount === null) throw new Error("the project has a credit price");
  const { reservation } = expectOk(
    await client.POST("/v1/reservations/create", {
      body: { accountId: externalId, amount, operation: "chat.completion" },
    }),
  );
  const confirmed = expectOk(
    await client.POST("/v1/reservations/confirm", {
      body: {
        reservationId: reservation.id,
        usage: {
          modelId: "claude-sonnet-4-5",
          inputTokens: 9500,
          outputTokens: 3100,
          cachedTokens: 2000,
        },
      },
    }),
  );
  // A confirm with usage always answers its usage record and the credits charged.
  if (!("creditsCharged" in confirmed)) throw new Error("a confirm with usage has creditsCharged");
  const usage = expectOk(
    await client.POST("/v1/usage/record", {
      body: {
        accountId: externalId,
        modelId: "claude-sonnet-4-5",
        inputTokens: 1000,
        outputTokens: 200,
        deduct: true,
      },
    }),
  );
  const ledger = expectOk(
    await client.GET("/v1/transactions", {
      params: { query: { accountId: externalId, include: "usage" } },
    }),
  );
  const balance = expectOk(
    await client.GET("/v1/accounts/balance", { params: { query: { externalId } } }),
  );
  return { created, estimate, reservation, confirmed, usage, ledger, balance };
}

/** Checks what the tour answered. */
function expectTour(result: Awaited<ReturnType<typeof tour>>, externalId: string) {
  const { created, estimate, reservation, confirmed, usage, ledger, balance } = result;
  expect(created.account).toMatchObject({ externalId, balance: 0, name: "Ada Lovelace" });
  expect(estimate).toMatchObject({
    modelId: "claude-sonnet-4-5",
    estimatedCostUsd: 0.075,
    estimatedCostCredits: 7.5,
  });
  expect(reservation).toMatchObject({ amount: 7.5, status: "pending" });
  expect(confirmed).toMatchObject({
    reservedAmount: 7.5,
    actualAmount: 6.96,
    creditsCharged: 6.96,
    balance: 18.54,
    amountReleased: 0.54,
  });
  expect(confirmed.usageRecord).toMatchObject({
    transactionId: confirmed.transactionId,
    estimatedCostUsd: 0.0696,
    creditsCharged: 6.96,
  });
  expect(usage).toMatchObject({ creditsCharged: 0.6, balance: 17.94 });
  expect(usage.usageRecord).toMatchObject({ transactionId: usage.transactionId });
  expect(ledger.items.map((i) => [i.type, i.amount, i.balanceAfter])).toEqual([
    ["debit", 0.6, 17.94],
    ["debit", 6.96, 18.54],
    ["credit", 25.5, 25.5],
  ]);
  expect(ledger.items[0]?.usage?.map((u) => u.id)).toEqual([usage.usageRecord.id]);
  expect(ledger.items[1]?.usage?.map((u) => u.id)).toEqual([confirmed.usageRecord.id]);
  expect(balance).toEqual({
    accountId: created.account.id,
    externalId,
    balance: 17.94,
    reserved: 0,
    available: 17.94,
    fundedBy: created.account.id,
  });
}

describe("the typed client", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  it("runs the README tour in-process", async () => {
    expectTour(await tour(t.client, "customer-42"), "customer-42");
    expect(await t.verify()).toEqual([]);
  });

  it("runs the README tour against a listening server with the runtime's fetch", async () => {
    const client = createLedgerClient({ baseUrl: await t.listen(), apiKey: t.key });
    expectTour(await tour(client, "customer-43"), "customer-43");
    const health = expectOk(await client.GET("/health"));
    expect(health).toEqual({ status: "ok" });
    expect(expectOk(await client.GET("/ready"))).toEqual({ status: "ready" });
  });

  it("makes a misspelt path, a missing or mistyped field and an unknown response field compile errors", async () => {
    await t.client.POST("/v1/accounts/create", { body: { externalId: "typed" } });
    // @ts-expect-error a path the API does not have
    const misspelt = await t.client.POST("/v1/accounts/credits/deduc", {
      body: { accountId: "typed", amount: 1 },
    });
    expectFailure(misspelt, 404, "NOT_FOUND");
    const missing = await t.client.POST("/v1/accounts/credits/deduct", {
      // @ts-expect-error `amount` is required
      body: { accountId: "typed" },
    });
    expectFailure(missing, 400, "VALIDATION_ERROR");
    const mistyped = await t.client.POST("/v1/accounts/credits/add", {
      // @ts-expect-error an amount is a number (or a LosslessNumber), never a string
      body: { accountId: "typed", amount: "5" },
    });
    expectFailure(mistyped, 400, "VALIDATION_ERROR");
    // @ts-expect-error GET has no /v1/accounts/create
    await t.client.GET("/v1/accounts/create");
    const view = expectOk(
      await t.client.GET("/v1/accounts/balance", { params: { query: { accountId: "typed" } } }),
    );
    // @ts-expect-error the balance view has `available`, not `availableCredits`
    expect(view.availableCredits).toBeUndefined();
    expect(view.available).toBe(0);
  });

  it("says which numbers are amounts: `Amount` (number | LosslessNumber), counts stay number", async () => {
    const { pagination } = expectOk(
      await t.client.GET("/v1/accounts/grants", {
        params: { query: { accountId: "customer-42" } },
      }),
    );
    const count: number = pagination.totalCount;
    const view = expectOk(
      await t.client.GET("/v1/accounts/balance", {
        params: { query: { accountId: "customer-42" } },
      }),
    );
    const amount: Amount = view.balance;
    // @ts-expect-error an amount may be a LosslessNumber: no arithmetic without a decision
    const sum: number = view.balance + 1;
    expect([count, amount]).toEqual([1, 17.94]);
    expect(sum).toBeCloseTo(18.94);
  });
});

describe("amounts through the client", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
    expectOk(await t.client.POST("/v1/accounts/create", { body: { externalId: "big" } }));
    // 8,600,000,000.000001 credits: a double cannot hold it (its neighbours are 2^-19 apart).
    for (let i = 0; i < 8; i++) {
      expectOk(
        await t.client.POST("/v1/accounts/credits/add", {
          body: { accountId: "big", amount: 1_000_000_000 },
        }),
      );
    }
  });
  afterAll(async () => t.close());

  it("reads an amount a double would round as a LosslessNumber holding the exact literal", async () => {
    const added = expectOk(
      await t.client.POST("/v1/accounts/credits/add", {
        body: { accountId: "big", amount: 600_000_000.000001 },
      }),
    );
    expect(added.added).toBe(600_000_000.000001);
    expect(added.balance).toBeInstanceOf(LosslessNumber);
    expect(String(added.balance)).toBe("8600000000.000001");
    const view = expectOk(
      await t.client.GET("/v1/accounts/balance", { params: { query: { accountId: "big" } } }),
    );
    expect(view.balance).toEqual(new LosslessNumber("8600000000.000001"));
    expect(view.available).toEqual(new LosslessNumber("8600000000.000001"));
    expect(view.reserved).toBe(0);
    const { items } = expectOk(
      await t.client.GET("/v1/transactions", { params: { query: { accountId: "big" } } }),
    );
    expect(String(items[0]?.balanceAfter)).toBe("8600000000.000001");
    expect(items[1]?.balanceAfter).toBe(8_000_000_000);
  });

  it("reads an error body exactly too", async () => {
    const refused = await t.client.POST("/v1/accounts/credits/add", {
      body: { accountId: "big", amount: 1_000_000_000 },
    });
    const error = expectFailure(refused, 409, "BALANCE_LIMIT_EXCEEDED");
    expect(error.error.details).toEqual({
      balance: new LosslessNumber("8600000000.000001"),
      requested: 1_000_000_000,
    });
  });

  it("writes a LosslessNumber to the wire as its literal, digit for digit", async () => {
    // As a double, 0.30000000000000001 is 0.3 and would be taken; its literal has 17 decimals.
    const refused = await t.client.POST("/v1/accounts/credits/deduct", {
      body: { accountId: "big", amount: new LosslessNumber("0.30000000000000001") },
    });
    expect(expectFailure(refused, 400, "VALIDATION_ERROR").error.message).toContain("6 decimal");
    const exact = expectOk(
      await t.client.POST("/v1/accounts/credits/deduct", {
        body: { accountId: "big", amount: new LosslessNumber("0.000001") },
      }),
    );
    expect(exact.balance).toBe(8_600_000_000);
    const threshold = expectOk(
      await t.client.POST("/v1/accounts/update", {
        body: { accountId: "big", lowBalanceThreshold: new LosslessNumber("1e9") },
      }),
    );
    expect(threshold.account.lowBalanceThreshold).toBe(1_000_000_000);
  });
});

describe("idempotency through the client", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  it("sends the Idempotency-Key and reads Idempotent-Replayed", async () => {
    expectOk(await t.client.POST("/v1/accounts/create", { body: { externalId: "idem" } }));
    const topUp = () =>
      t.client.POST("/v1/accounts/credits/add", {
        body: { accountId: "idem", amount: 10 },
        headers: { "Idempotency-Key": "topup-1" },
      });
    const first = await topUp();
    const again = await topUp();
    expect(first.response.headers.get("Idempotent-Replayed")).toBeNull();
    expect(again.response.headers.get("Idempotent-Replayed")).toBe("true");
    expect(expectOk(again)).toEqual(expectOk(first));
    const view = expectOk(
      await t.client.GET("/v1/accounts/balance", { params: { query: { accountId: "idem" } } }),
    );
    expect(view.balance).toBe(10);
  });
});
