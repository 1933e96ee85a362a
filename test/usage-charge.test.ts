/**
 * Charging usage in credits (docs/api.md#charging-usage-in-credits), over a real HTTP server on
 * both engines: the project's credit price, the exact credit cost rounded up to the
 * micro-credit, `POST /v1/usage/record` with `deduct: true` (one unit: the record and its debit,
 * or neither), a replayed Idempotency-Key, simultaneous charges against too few credits, a
 * confirm with `usage`, `estimatedCostCredits`, and `creditsCharged` in lists and summaries.
 * After each test `ledger verify` (the command, on the test's database) finds every invariant.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { modelRoutes } from "../src/models/routes.ts";
import { projectRoutes } from "../src/projects/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { expectError } from "./contract.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import {
  countStatuses,
  fetchFrom,
  type JsonRequest,
  okBody,
  routePath,
  type Send,
  sendJson,
} from "./http-client.ts";
import { runCliAsync } from "./processes.ts";

/** gpt-4o in the shipped catalog: 2.5 USD per million input tokens, 10 per million output. */
const GPT = "gpt-4o";

describe("charging usage in credits, over HTTP", () => {
  let t: TestLedger;
  let send: Send;
  beforeEach(async () => {
    t = await makeLedger();
    send = fetchFrom(await t.listen());
  });
  afterEach(async () => {
    const env = { ...process.env, ...t.databaseEnv };
    const verify = await runCliAsync(["verify"], env);
    expect(verify.stdout, verify.stderr).toMatch(/verified \d+ accounts, \d+ transactions: OK/);
    expect(verify.status).toBe(0);
    await t.close();
  });

  const post = (path: string, body: unknown, request: JsonRequest = {}) =>
    sendJson(send, t.key, "POST", path, { ...request, body });
  const get = (path: string) => sendJson(send, t.key, "GET", path);
  const setPrice = async (creditsPerUsd: number | string | null) => {
    const body = typeof creditsPerUsd === "string" ? `{"creditsPerUsd":${creditsPerUsd}}` : null;
    if (body !== null) {
      // A literal a double cannot write: sent as text.
      const res = await send("/v1/project/update", {
        method: "POST",
        headers: { "X-API-Key": t.key, "Content-Type": "application/json" },
        body,
      });
      return { status: res.status, body: await res.json() };
    }
    return post("/v1/project/update", { creditsPerUsd });
  };
  const charge = (body: Record<string, unknown>, request: JsonRequest = {}) =>
    post("/v1/usage/record", { modelId: GPT, deduct: true, ...body }, request);
  const usageList = async (query: Record<string, string | number | boolean> = {}) =>
    okBody(usageRoutes.list, await get(routePath(usageRoutes.list, query)));
  const balanceOf = async (ref: string) => {
    const res = await get(`/v1/accounts/balance?accountId=${ref}`);
    return res.body as { balance: number; reserved: number; available: number };
  };
  const debitsOf = async (ref: string) => {
    const res = await get(routePath(transactionRoutes.list, { accountId: ref, limit: 500 }));
    const list = okBody(transactionRoutes.list, res);
    return list.items.filter((x) => x.type === "debit");
  };

  it("keeps the project's credit price exactly, and refuses prices outside its rules", async () => {
    const first = okBody(projectRoutes.get, await get("/v1/project"));
    expect(first.project).toMatchObject({ id: t.projectId, name: "test", creditsPerUsd: null });
    const set = okBody(projectRoutes.update, await setPrice(100));
    expect(set.project).toEqual({ ...first.project, creditsPerUsd: 100 });
    expect(okBody(projectRoutes.get, await get("/v1/project")).project.creditsPerUsd).toBe(100);
    const exact = await setPrice("1000000000.000000");
    expect(okBody(projectRoutes.update, exact).project.creditsPerUsd).toBe(1e9);
    for (const bad of ["0", "-1", "0.0000001", "1000000000.000001", '"100"']) {
      expectError(await setPrice(bad), 400, "VALIDATION_ERROR");
    }
    expect(okBody(projectRoutes.get, await get("/v1/project")).project.creditsPerUsd).toBe(1e9);
    expect(okBody(projectRoutes.update, await setPrice(null)).project.creditsPerUsd).toBeNull();
    // Another project's price is its own.
    const other = await t.newProject("other");
    await sendJson(send, other.key, "POST", "/v1/project/update", { body: { creditsPerUsd: 7 } });
    expect(okBody(projectRoutes.get, await get("/v1/project")).project.creditsPerUsd).toBeNull();
  });

  it("sets the price from the command line, which the API then charges at", async () => {
    const env = { ...process.env, ...t.databaseEnv };
    const bad = await runCliAsync(["project", "set-price", "--project", "test", "0.1234567"], env);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/at most 6 decimals/);
    const missing = await runCliAsync(["project", "set-price", "--project", "nope", "5"], env);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no project named nope/);
    const ok = await runCliAsync(["project", "set-price", "--project", "test", "12.5"], env);
    expect(ok.stdout, ok.stderr).toContain("creditsPerUsd 12.5");
    expect(ok.status).toBe(0);
    expect(okBody(projectRoutes.get, await get("/v1/project")).project.creditsPerUsd).toBe(12.5);
  });

  it("charges the exact cost rounded up to the micro-credit, in one unit with its record", async () => {
    const accountId = await fundedAccount(t, "u1", 10);
    await setPrice(1.234567);
    // 7 input tokens of gpt-4o: 0.0000175 USD × 1.234567 = 0.0000216049225 credits, which
    // has more than 6 decimals: charged 0.000022 (rounded up, never down).
    const tokens = { inputTokens: 7, outputTokens: 0 };
    const estimate = okBody(
      modelRoutes.calculate,
      await post("/v1/models/calculate", { modelId: GPT, ...tokens }),
    );
    expect(estimate.estimatedCostUsd).toBe(0.0000175);
    expect(estimate.estimatedCostCredits).toBe(0.000022);
    const res = okBody(usageRoutes.record, await charge({ accountId: "u1", ...tokens }));
    expect(res.creditsCharged).toBe(0.000022);
    expect(res.balance).toBe(9.999978);
    expect(res.transactionId).toEqual(expect.stringMatching(/^txn_/));
    expect(res.usageRecord).toMatchObject({
      accountId,
      context: "customer",
      estimatedCostUsd: 0.0000175,
      creditsCharged: 0.000022,
      transactionId: res.transactionId,
    });
    const debits = await debitsOf("u1");
    expect(debits).toHaveLength(1);
    expect(debits[0]).toMatchObject({
      id: res.transactionId,
      amount: 0.000022,
      balanceAfter: 9.999978,
      metadata: { usageRecordId: res.usageRecord.id, modelId: GPT },
    });
    expect(await balanceOf("u1")).toMatchObject({ balance: 9.999978, available: 9.999978 });
    // 1 cached-free input token at 0.3 credits per USD: 0.00000075 credits → 0.000001.
    await setPrice(0.3);
    const tiny = okBody(
      usageRoutes.record,
      await charge({ accountId: "u1", inputTokens: 1, outputTokens: 0 }),
    );
    expect(tiny.creditsCharged).toBe(0.000001);
    // A price change applies to later records only.
    const listed = await usageList({ accountId: "u1" });
    if (!("usageRecords" in listed)) throw new Error("a list was expected");
    expect(listed.usageRecords.map((r) => r.creditsCharged)).toEqual([0.000001, 0.000022]);
  });

  it("books the same debit and record whether the charge is plain or takes the general path", async () => {
    // plain: one grant, no threshold; by internal id, too. split: the first grant in spending
    // order cannot cover the charge. alert: the charge crosses the low-balance threshold.
    const plainId = await fundedAccount(t, "plain", 10);
    await fundedAccount(t, "split");
    for (const priority of [10, 20]) {
      await post("/v1/accounts/credits/add", { accountId: "split", amount: 0.3, priority });
    }
    await fundedAccount(t, "alert", 10);
    await post("/v1/accounts/update", { accountId: "alert", lowBalanceThreshold: 9.8 });
    await setPrice(100);
    // 5,000 output tokens of gpt-4o: 0.05 USD = 5 credits at 100 per USD; 500 tokens: 0.5.
    const cases = [
      ["plain", 5000, 5],
      [plainId, 5000, 0],
      ["split", 500, 0.1],
      ["alert", 500, 9.5],
    ] as const;
    for (const [ref, outputTokens, balance] of cases) {
      const res = okBody(
        usageRoutes.record,
        await charge({ accountId: ref, inputTokens: 0, outputTokens }),
      );
      const credits = outputTokens / 1000;
      expect(res, ref).toMatchObject({ creditsCharged: credits, balance });
      expect(res.usageRecord, ref).toMatchObject({
        context: "customer",
        modelId: GPT,
        inputTokens: 0,
        outputTokens,
        creditsCharged: credits,
        transactionId: res.transactionId,
      });
      const debits = await debitsOf(ref);
      expect(debits[0], ref).toMatchObject({
        id: res.transactionId,
        amount: credits,
        balanceAfter: balance,
        description: `Usage of ${GPT}`,
        metadata: { usageRecordId: res.usageRecord.id, modelId: GPT },
      });
    }
    // The split charge spent the first grant, then 0.2 of the second.
    const grants = await get("/v1/accounts/grants?accountId=split");
    const remaining = (grants.body as { grants: { priority: number; remaining: number }[] }).grants
      .map((g) => [g.priority, g.remaining])
      .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(remaining).toEqual([
      [10, 0],
      [20, 0.1],
    ]);
    const listed = await usageList();
    expect("usageRecords" in listed && listed.usageRecords.length).toBe(4);
  });

  it("charges a model price changed by another process from the next charge on", async () => {
    await fundedAccount(t, "u1", 10);
    await setPrice(100);
    const body = { accountId: "u1", inputTokens: 0, outputTokens: 1000 };
    // 1,000 output tokens at 10 USD per million: 0.01 USD = 1 credit, twice (the second at the
    // prices the first read).
    for (let i = 0; i < 2; i++) {
      expect(okBody(usageRoutes.record, await charge(body)).creditsCharged).toBe(1);
    }
    // The catalog changed underneath the service (as `ledger models import` would): 20 USD.
    await t.ledger.db.write
      .updateTable("models")
      .set({ output_micros_per_m: 20_000_000 })
      .where("model_id", "=", GPT)
      .execute();
    const after = okBody(usageRoutes.record, await charge(body));
    expect(after.creditsCharged).toBe(2);
    expect(after.usageRecord).toMatchObject({ estimatedCostUsd: 0.02, creditsCharged: 2 });
    expect(after.balance).toBe(6);
    expect(okBody(usageRoutes.record, await charge(body)).creditsCharged).toBe(2);
  });

  it("charges a credit price or a cached price changed underneath from the next charge on", async () => {
    await fundedAccount(t, "u1", 10);
    await setPrice(100);
    const body = { accountId: "u1", inputTokens: 1000, cachedTokens: 1000, outputTokens: 0 };
    // 1,000 cached tokens of gpt-4o (1.25 USD per million): 0.00125 USD = 0.125 credits, twice
    // (the second at the prices the first read).
    for (let i = 0; i < 2; i++) {
      expect(okBody(usageRoutes.record, await charge(body)).creditsCharged).toBe(0.125);
    }
    // The project's price changed by another process (as `ledger project set-price` would).
    await t.ledger.db.write
      .updateTable("projects")
      .set({ credits_per_usd_micros: 300_000_000 })
      .where("id", "=", t.projectId)
      .execute();
    expect(okBody(usageRoutes.record, await charge(body)).creditsCharged).toBe(0.375);
    expect(okBody(usageRoutes.record, await charge(body)).creditsCharged).toBe(0.375);
    // The cached price removed underneath: cached tokens cost the input price (2.5 USD).
    await t.ledger.db.write
      .updateTable("models")
      .set({ cached_micros_per_m: null })
      .where("model_id", "=", GPT)
      .execute();
    const after = okBody(usageRoutes.record, await charge(body));
    expect(after).toMatchObject({ creditsCharged: 0.75, balance: 10 - 0.25 - 0.75 - 0.75 });
    expect(okBody(usageRoutes.record, await charge(body)).creditsCharged).toBe(0.75);
    const listed = await usageList();
    const charged = "usageRecords" in listed && listed.usageRecords.map((r) => r.creditsCharged);
    expect(charged).toEqual([0.75, 0.75, 0.375, 0.375, 0.125, 0.125]);
  });

  it("records nothing when the credits fall short (402), and 400s what deduct needs", async () => {
    await fundedAccount(t, "poor", 0.00001);
    await t.newProject("unused");
    const noPrice = await charge({ accountId: "poor", inputTokens: 1000, outputTokens: 0 });
    const err = expectError(noPrice, 400, "VALIDATION_ERROR");
    expect(err.error.message).toContain("POST /v1/project/update");
    await setPrice(100);
    // 1000 input tokens: 0.0025 USD = 0.25 credits, above the 0.00001 available.
    const short = await charge({ accountId: "poor", inputTokens: 1000, outputTokens: 0 });
    const refused = expectError(short, 402, "INSUFFICIENT_CREDITS");
    expect(refused.error.details).toEqual({ available: 0.00001, requested: 0.25 });
    const system = await charge({ context: "system", inputTokens: 1, outputTokens: 0 });
    expect(expectError(system, 400, "VALIDATION_ERROR").error.message).toMatch(/context customer/);
    const noAccount = await charge({ inputTokens: 1, outputTokens: 0 });
    expect(expectError(noAccount, 400, "VALIDATION_ERROR").error.message).toMatch(/accountId/);
    const withTxn = await charge({
      accountId: "poor",
      transactionId: "txn_x",
      inputTokens: 1,
      outputTokens: 0,
    });
    expect(expectError(withTxn, 400, "VALIDATION_ERROR").error.message).toMatch(/transactionId/);
    const ghost = await charge({ accountId: "ghost", inputTokens: 1, outputTokens: 0 });
    expectError(ghost, 404, "ACCOUNT_NOT_FOUND");
    const noModel = await charge({
      accountId: "poor",
      modelId: "no-such",
      inputTokens: 1,
      outputTokens: 0,
    });
    expectError(noModel, 404, "MODEL_NOT_FOUND");
    const listed = await usageList();
    expect("usageRecords" in listed && listed.usageRecords).toEqual([]);
    expect(await debitsOf("poor")).toEqual([]);
    expect(await balanceOf("poor")).toMatchObject({ balance: 0.00001 });
  });

  it("records a cost of 0 without a debit", async () => {
    await fundedAccount(t, "u1", 5);
    await setPrice(100);
    const res = okBody(
      usageRoutes.record,
      await charge({ accountId: "u1", inputTokens: 0, outputTokens: 0 }),
    );
    expect(res).toMatchObject({ creditsCharged: 0, transactionId: null, balance: 5 });
    expect(res.usageRecord).toMatchObject({ creditsCharged: 0, transactionId: null });
    expect(await debitsOf("u1")).toEqual([]);
  });

  it("verify finds a charged record whose debit is missing, another, or shared", async () => {
    await fundedAccount(t, "u1", 10);
    await setPrice(100);
    // 1000 output tokens: 0.01 USD = 1 credit; 2000: 2 credits.
    const charged = async (outputTokens: number) =>
      okBody(usageRoutes.record, await charge({ accountId: "u1", inputTokens: 0, outputTokens }));
    const first = await charged(1000);
    const second = await charged(1000);
    const third = await charged(2000);
    expect(await t.verify()).toEqual([]);
    const debitOf = (r: typeof first) => {
      if (!r.transactionId) throw new Error("a charge of more than 0 books a debit");
      return r.transactionId;
    };
    const [firstTxn, secondTxn, thirdTxn] = [debitOf(first), debitOf(second), debitOf(third)];
    const db = t.ledger.db.write;
    const setRecord = (id: string, set: { credits?: number; transactionId: string | null }) =>
      db
        .updateTable("usage_records")
        .where("id", "=", id)
        .set({
          transaction_id: set.transactionId,
          ...(set.credits === undefined ? {} : { credits_charged_micros: set.credits }),
        })
        .execute();
    const firstId = first.usageRecord.id;
    // Charged one micro-credit more than its debit took.
    await setRecord(firstId, { credits: 1_000_001, transactionId: firstTxn });
    expect(await t.verify()).toEqual([
      `usage record ${firstId}: charged 1.000001 without its debit`,
    ]);
    // Its debit gone (a transaction id that names nothing).
    await setRecord(firstId, { credits: 1_000_000, transactionId: "txn_missing" });
    expect(await t.verify()).toEqual([`usage record ${firstId}: charged 1 without its debit`]);
    // The debit of another charge of the same amount: matches, but is shared.
    await setRecord(firstId, { transactionId: secondTxn });
    expect(await t.verify()).toEqual([
      `transaction ${secondTxn}: the debit of more than one charge`,
    ]);
    // The debit of a charge of another amount.
    await setRecord(firstId, { transactionId: thirdTxn });
    const problems = await t.verify();
    expect(problems).toContain(`usage record ${firstId}: charged 1 without its debit`);
    expect(problems).toContain(`transaction ${thirdTxn}: the debit of more than one charge`);
    await setRecord(firstId, { transactionId: firstTxn });
    expect(await t.verify()).toEqual([]);
  });

  it("applies a replayed Idempotency-Key once: one debit, one record", async () => {
    await fundedAccount(t, "u1", 10);
    await setPrice(100);
    const body = { accountId: "u1", inputTokens: 0, outputTokens: 1000 };
    const idempotencyKey = "charge-1";
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => charge(body, { idempotencyKey })),
    );
    const again = await charge(body, { idempotencyKey });
    for (const r of [...replies, again]) expect(r.status).toBe(200);
    expect(new Set([...replies, again].map((r) => r.text)).size).toBe(1);
    expect(again.replayed).toBe("true");
    expect(replies.filter((r) => r.replayed === null)).toHaveLength(1);
    // 1000 output tokens: 0.01 USD = 1 credit.
    expect(okBody(usageRoutes.record, again).creditsCharged).toBe(1);
    expect(await debitsOf("u1")).toHaveLength(1);
    const listed = await usageList();
    expect("usageRecords" in listed && listed.usageRecords.length).toBe(1);
    expect(await balanceOf("u1")).toMatchObject({ balance: 9 });
  });

  it("grants exactly 10 of 30 simultaneous charges of 1 credit against 10", async () => {
    await fundedAccount(t, "u1", 10);
    await setPrice(1);
    // 100,000 output tokens of gpt-4o: 1 USD = 1 credit.
    const body = { accountId: "u1", inputTokens: 0, outputTokens: 100_000 };
    const replies = await Promise.all(Array.from({ length: 30 }, () => charge(body)));
    expect(countStatuses(replies)).toEqual({ 200: 10, 402: 20 });
    for (const r of replies.filter((x) => x.status === 402)) {
      expectError(r, 402, "INSUFFICIENT_CREDITS");
    }
    const balances = replies
      .filter((r) => r.status === 200)
      .map((r) => okBody(usageRoutes.record, r).balance);
    expect([...balances].sort((a, b) => Number(a) - Number(b))).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    const summary = await usageList({ summary: true, groupBy: "account" });
    if (!("summary" in summary)) throw new Error("a summary was expected");
    expect(summary.summary.creditsCharged).toBe(10);
    expect(summary.summary.totalCostUsd).toBe(10);
    expect(summary.summary.groups?.map((g) => [g.requestCount, g.creditsCharged])).toEqual([
      [10, 10],
    ]);
    expect(await debitsOf("u1")).toHaveLength(10);
    expect(await balanceOf("u1")).toMatchObject({ balance: 0, available: 0 });
  });

  it("confirms a reservation with usage: the amount is its credit cost, recorded with the debit", async () => {
    const accountId = await fundedAccount(t, "u1", 20);
    await setPrice(100);
    // 9,500 input (2,000 cached) and 3,100 output tokens of gpt-4o, priced by the service: the
    // caller reserves the estimate and confirms with the usage, with no arithmetic of its own.
    const usage = { modelId: GPT, inputTokens: 9500, outputTokens: 3100, cachedTokens: 2000 };
    const estimate = okBody(modelRoutes.calculate, await post("/v1/models/calculate", usage));
    const amount = estimate.estimatedCostCredits;
    if (amount === null) throw new Error("the project has a price");
    const hold = okBody(
      reservationRoutes.create,
      await post("/v1/reservations/create", { accountId: "u1", amount }),
    );
    const confirm = (body: unknown) => post("/v1/reservations/confirm", body);
    const both = await confirm({ reservationId: hold.reservation.id, actualAmount: 1, usage });
    expectError(both, 400, "VALIDATION_ERROR");
    expectError(await confirm({ reservationId: hold.reservation.id }), 400, "VALIDATION_ERROR");
    const done = okBody(
      reservationRoutes.confirm,
      await confirm({ reservationId: hold.reservation.id, usage }),
    );
    // A confirm with usage always answers its usage fields, and the types say so once narrowed.
    if (!("creditsCharged" in done)) throw new Error("a confirm with usage has creditsCharged");
    expect(done.actualAmount).toBe(amount);
    expect(done.creditsCharged).toBe(amount);
    expect(done.amountReleased).toBe(0);
    expect(done.usageRecord).toMatchObject({
      accountId,
      context: "customer",
      modelId: GPT,
      transactionId: done.transactionId,
      creditsCharged: amount,
      estimatedCostUsd: estimate.estimatedCostUsd,
    });
    expect(await balanceOf("u1")).toMatchObject({ balance: 20 - Number(amount), reserved: 0 });
    const debits = await debitsOf("u1");
    expect(debits.map((d) => [d.id, d.amount])).toEqual([[done.transactionId, amount]]);
  });

  it("keeps the reservation pending and records nothing when a confirm's usage exceeds what is free", async () => {
    await fundedAccount(t, "u1", 1);
    await setPrice(100);
    const hold = okBody(
      reservationRoutes.create,
      await post("/v1/reservations/create", { accountId: "u1", amount: 0.5 }),
    );
    // 1,000 output tokens: 0.01 USD = 1 credit. 2,000 tokens (2 credits) exceed the hold of 0.5
    // by 1.5, more than the 0.5 available: refused.
    const usage = { modelId: GPT, inputTokens: 0, outputTokens: 2000 };
    const refused = await post("/v1/reservations/confirm", {
      reservationId: hold.reservation.id,
      usage,
    });
    const err = expectError(refused, 402, "INSUFFICIENT_CREDITS");
    expect(err.error.details).toEqual({ available: 0.5, requested: 1.5 });
    const listed = await usageList();
    expect("usageRecords" in listed && listed.usageRecords).toEqual([]);
    const holds = okBody(
      reservationRoutes.list,
      await get(routePath(reservationRoutes.list, { accountId: "u1" })),
    );
    expect(holds.reservations[0]?.status).toBe("pending");
    // The excess that fits is debited, and the record written with it.
    const fits = await post("/v1/reservations/confirm", {
      reservationId: hold.reservation.id,
      usage: { ...usage, outputTokens: 1000 },
    });
    const done = okBody(reservationRoutes.confirm, fits);
    expect(done).toMatchObject({ actualAmount: 1, creditsCharged: 1, balance: 0 });
    // Without a price, a confirm with usage says how to set one.
    await setPrice(null);
    const next = okBody(
      ledgerRoutes.add,
      await post("/v1/accounts/credits/add", { accountId: "u1", amount: 1 }),
    );
    expect(next.balance).toBe(1);
    const hold2 = okBody(
      reservationRoutes.create,
      await post("/v1/reservations/create", { accountId: "u1", amount: 1 }),
    );
    const noPrice = await post("/v1/reservations/confirm", {
      reservationId: hold2.reservation.id,
      usage,
    });
    expect(expectError(noPrice, 400, "VALIDATION_ERROR").error.message).toContain(
      "POST /v1/project/update",
    );
  });

  it("sums creditsCharged exactly in summaries and groups, counting uncharged records as 0", async () => {
    await fundedAccount(t, "u1", 100);
    await setPrice(0.3);
    const tokens = { inputTokens: 1, outputTokens: 0 };
    for (let i = 0; i < 3; i++)
      okBody(usageRoutes.record, await charge({ accountId: "u1", ...tokens }));
    okBody(
      usageRoutes.record,
      await post("/v1/usage/record", { accountId: "u1", modelId: GPT, ...tokens }),
    );
    const listed = await usageList();
    if (!("usageRecords" in listed)) throw new Error("a list was expected");
    expect(listed.usageRecords.map((r) => r.creditsCharged)).toEqual([
      null,
      0.000001,
      0.000001,
      0.000001,
    ]);
    for (const groupBy of ["day", "model", "account", "context"]) {
      const s = await usageList({ summary: true, groupBy });
      if (!("summary" in s)) throw new Error("a summary was expected");
      expect(s.summary.creditsCharged, groupBy).toBe(0.000003);
      expect(
        s.summary.groups?.map((g) => g.creditsCharged),
        groupBy,
      ).toEqual([0.000003]);
    }
    const calc = await post("/v1/models/calculate", { modelId: GPT, ...tokens });
    expect(okBody(modelRoutes.calculate, calc).estimatedCostCredits).toBe(0.000001);
    await setPrice(null);
    const none = await post("/v1/models/calculate", { modelId: GPT, ...tokens });
    expect(okBody(modelRoutes.calculate, none).estimatedCostCredits).toBeNull();
  });
});
