import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import type { ErrorCode } from "../src/errors.ts";
import { runExpireReservations } from "../src/jobs/expire-reservations.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const START = "2026-03-01T10:00:00Z";
const START_MS = Date.parse(START);

describe("reservations", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger({ fakeClock: START });
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  const reserve = (body: Record<string, unknown>) => t.call(reservationRoutes.create, { body });
  const reserveFails = (body: Record<string, unknown>, status: number, code: ErrorCode) =>
    t.fail(reservationRoutes.create, { body }, status, code);
  const holdId = async (body: Record<string, unknown>) => (await reserve(body)).reservation.id;
  const confirm = (reservationId: string, actualAmount: number) =>
    t.call(reservationRoutes.confirm, { body: { reservationId, actualAmount } });
  const confirmFails = (id: string, actualAmount: number, status: number, code: ErrorCode) =>
    t.fail(reservationRoutes.confirm, { body: { reservationId: id, actualAmount } }, status, code);
  const cancel = (reservationId: string) =>
    t.call(reservationRoutes.cancel, { body: { reservationId } });
  const cancelFails = (reservationId: string, status: number, code: ErrorCode) =>
    t.fail(reservationRoutes.cancel, { body: { reservationId } }, status, code);
  const balance = (externalId: string) => t.call(accountRoutes.balance, { query: { externalId } });
  const list = async (externalId: string, activeOnly = false) => {
    const query = { accountId: externalId, ...(activeOnly ? { activeOnly: true } : {}) };
    const body = await t.call(reservationRoutes.list, { query });
    expect(body.success).toBe(true);
    return body.reservations;
  };
  const txns = () => t.call(transactionRoutes.list, { query: { accountId: "u1" } });

  it("creates a pending hold with metadata and a default 900 s lifetime", async () => {
    const accountId = await fundedAccount(t, "u1", 100);
    const res = await reserve({
      accountId: "u1",
      amount: 25.5,
      operation: "chat.completion",
      model: "gpt-4o",
    });
    expect(res).toEqual({
      success: true,
      reservation: expect.objectContaining({
        id: expect.any(String),
        accountId,
        amount: 25.5,
        status: "pending",
        expiresAt: "2026-03-01T10:15:00.000Z",
        metadata: { operation: "chat.completion", model: "gpt-4o" },
      }),
    });
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 25.5, available: 74.5 });
    const [listed] = await list("u1");
    expect(listed).toMatchObject({
      id: res.reservation.id,
      createdAt: new Date(START_MS).toISOString(),
    });
  });

  it("accepts ttlSeconds from 1 to 86400 and rejects 0, 86401 and 1.5", async () => {
    await fundedAccount(t, "u1", 100);
    const one = await reserve({ accountId: "u1", amount: 1, ttlSeconds: 1 });
    expect(one.reservation.expiresAt).toBe("2026-03-01T10:00:01.000Z");
    const day = await reserve({ accountId: "u1", amount: 1, ttlSeconds: 86400 });
    expect(day.reservation.expiresAt).toBe("2026-03-02T10:00:00.000Z");
    for (const ttlSeconds of [0, 86401, 1.5, -5, "60"]) {
      await reserveFails({ accountId: "u1", amount: 1, ttlSeconds }, 400, "VALIDATION_ERROR");
    }
    expect(await balance("u1")).toMatchObject({ reserved: 2, available: 98 });
  });

  it("rejects a hold beyond available with 402 and details, changing nothing", async () => {
    await fundedAccount(t, "u1", 100);
    await reserve({ accountId: "u1", amount: 60 });
    const res = await reserveFails(
      { accountId: "u1", amount: 40.000001 },
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(res).toMatchObject({
      success: false,
      error: { code: "INSUFFICIENT_CREDITS", details: { available: 40, requested: 40.000001 } },
    });
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 60, available: 40 });
    expect(await list("u1")).toHaveLength(1);
    await reserve({ accountId: "u1", amount: 40 });
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 100, available: 0 });
  });

  it("rejects bad amounts and unknown accounts", async () => {
    await fundedAccount(t, "u1", 100);
    for (const amount of [0, -1, 1.0000001]) {
      await reserveFails({ accountId: "u1", amount }, 400, "VALIDATION_ERROR");
    }
    await reserveFails({ accountId: "nobody", amount: 1 }, 404, "ACCOUNT_NOT_FOUND");
  });

  it("confirms below the hold: debits the actual amount and releases the rest", async () => {
    const accountId = await fundedAccount(t, "u1", 100);
    const id = await holdId({ accountId: "u1", amount: 30, operation: "op", model: "m" });
    const res = await confirm(id, 12.5);
    expect(res).toMatchObject({
      success: true,
      reservationId: id,
      transactionId: expect.any(String),
      reservedAmount: 30,
      actualAmount: 12.5,
      balance: 87.5,
    });
    expect(await balance("u1")).toMatchObject({ balance: 87.5, reserved: 0, available: 87.5 });
    const [item] = (await list("u1")).filter((r) => r.id === id);
    expect(item?.status).toBe("confirmed");
    const tx = (await txns()).items.find((i) => i.id === res.transactionId);
    expect(tx).toMatchObject({ accountId, type: "debit", amount: 12.5, balanceAfter: 87.5 });
    expect(tx?.metadata.reservationId).toBe(id);
  });

  it("confirms with 0: a debit of 0 is still recorded and everything is released", async () => {
    await fundedAccount(t, "u1", 50);
    const id = await holdId({ accountId: "u1", amount: 20 });
    const res = await confirm(id, 0);
    expect(res).toMatchObject({ reservedAmount: 20, actualAmount: 0, balance: 50 });
    const txs = await txns();
    expect(txs.pagination.totalCount).toBe(2);
    expect(txs.items[0]).toMatchObject({
      id: res.transactionId,
      type: "debit",
      amount: 0,
      balanceAfter: 50,
      metadata: expect.objectContaining({ reservationId: id }),
    });
    expect(await balance("u1")).toMatchObject({ balance: 50, reserved: 0, available: 50 });
  });

  it("confirms above the hold when the excess fits in available", async () => {
    await fundedAccount(t, "u1", 100);
    const res = await confirm(await holdId({ accountId: "u1", amount: 10 }), 25);
    expect(res).toMatchObject({ reservedAmount: 10, actualAmount: 25, balance: 75 });
    expect(await balance("u1")).toMatchObject({ balance: 75, reserved: 0, available: 75 });
  });

  it("refuses an overage beyond available with 402; the hold stays pending", async () => {
    await fundedAccount(t, "u1", 100);
    const a = await holdId({ accountId: "u1", amount: 40 });
    await reserve({ accountId: "u1", amount: 50 });
    const res = await confirmFails(a, 55, 402, "INSUFFICIENT_CREDITS");
    expect(res).toMatchObject({
      success: false,
      error: { code: "INSUFFICIENT_CREDITS", details: { requested: 15, available: 10 } },
    });
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 90, available: 10 });
    expect((await list("u1")).find((r) => r.id === a)?.status).toBe("pending");
    expect((await txns()).pagination.totalCount).toBe(1);
    const ok = await confirm(a, 50);
    expect(ok).toMatchObject({ reservedAmount: 40, actualAmount: 50, balance: 50 });
    expect(await balance("u1")).toMatchObject({ balance: 50, reserved: 50, available: 0 });
  });

  it("cancels a hold, and refuses to settle a settled hold twice", async () => {
    const accountId = await fundedAccount(t, "u1", 100);
    const c = await holdId({ accountId: "u1", amount: 33.3 });
    const res = await cancel(c);
    expect(res).toEqual(
      expect.objectContaining({ success: true, reservationId: c, amountReleased: 33.3, accountId }),
    );
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 0, available: 100 });
    expect((await list("u1"))[0]?.status).toBe("cancelled");

    const k = await holdId({ accountId: "u1", amount: 5 });
    await confirm(k, 5);

    for (const [id, status] of [
      [c, "cancelled"],
      [k, "confirmed"],
    ] as const) {
      const notPending = "RESERVATION_NOT_PENDING";
      for (const again of [
        await confirmFails(id, 1, 409, notPending),
        await cancelFails(id, 409, notPending),
      ]) {
        expect(again).toMatchObject({
          success: false,
          error: { code: "RESERVATION_NOT_PENDING", details: { status } },
        });
      }
    }
    expect(await balance("u1")).toMatchObject({ balance: 95, reserved: 0 });
    expect((await txns()).pagination.totalCount).toBe(2);
  });

  it("answers 404 for unknown reservations and those of another project", async () => {
    await fundedAccount(t, "u1", 10);
    const id = await holdId({ accountId: "u1", amount: 5 });
    const other = await t.newProject("other");
    await confirmFails("res_nope", 1, 404, "RESERVATION_NOT_FOUND");
    await cancelFails("res_nope", 404, "RESERVATION_NOT_FOUND");
    await t.fail(
      reservationRoutes.cancel,
      { body: { reservationId: id }, key: other.key },
      404,
      "RESERVATION_NOT_FOUND",
    );
    expect(await balance("u1")).toMatchObject({ reserved: 5 });
  });

  it("lists newest first; activeOnly keeps only pending unexpired holds", async () => {
    await fundedAccount(t, "u1", 100);
    const ids: string[] = [];
    for (const amount of [1, 2, 3, 4]) {
      ids.push(await holdId({ accountId: "u1", amount, ttlSeconds: 600 }));
      t.advance(60_000);
    }
    await cancel(ids[1] as string);
    await confirm(ids[2] as string, 3);
    const all = await list("u1");
    expect(all.map((r) => r.id)).toEqual([...ids].reverse());
    expect(all.map((r) => r.status)).toEqual(["pending", "confirmed", "cancelled", "pending"]);
    expect((await list("u1", true)).map((r) => r.id)).toEqual([ids[3], ids[0]]);
    // ids[0] was created at +0 with 600 s: at +600 s it is no longer active.
    t.setNow(START_MS + 600_000);
    expect((await list("u1", true)).map((r) => r.id)).toEqual([ids[3]]);
    await t.fail(reservationRoutes.list, {}, 400, "VALIDATION_ERROR");
  });

  it("expires a hold at expiresAt, before and after the sweeper runs", async () => {
    await fundedAccount(t, "u1", 100);
    const id = await holdId({ accountId: "u1", amount: 70, ttlSeconds: 60 });
    const keep = await holdId({ accountId: "u1", amount: 10, ttlSeconds: 3600 });
    t.advance(59_999);
    expect(await balance("u1")).toMatchObject({ reserved: 80, available: 20 });
    t.advance(1);
    // No sweep yet: the hold stops counting at the instant it expires.
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 10, available: 90 });
    const stored = async () =>
      (
        await t.ledger.db.read
          .selectFrom("reservations")
          .select("status")
          .where("id", "=", id)
          .executeTakeFirstOrThrow()
      ).status;
    expect(await stored()).toBe("pending");
    expect((await list("u1")).find((r) => r.id === id)?.status).toBe("expired");
    expect((await list("u1", true)).map((r) => r.id)).toEqual([keep]);
    const notPending = "RESERVATION_NOT_PENDING";
    for (const res of [
      await confirmFails(id, 1, 409, notPending),
      await cancelFails(id, 409, notPending),
    ]) {
      expect(res.error).toMatchObject({
        code: "RESERVATION_NOT_PENDING",
        details: { status: "expired" },
      });
    }
    // The released credits can be held again.
    await reserve({ accountId: "u1", amount: 90 });

    const marked = await runExpireReservations({ queue: t.ledger.queue, nowMs: t.now() });
    expect(marked).toBe(1);
    expect(await stored()).toBe("expired");
    expect(await runExpireReservations({ queue: t.ledger.queue, nowMs: t.now() })).toBe(0);
    expect((await list("u1")).find((r) => r.id === keep)?.status).toBe("pending");
    expect(await balance("u1")).toMatchObject({ balance: 100, reserved: 100, available: 0 });
    expect((await txns()).pagination.totalCount).toBe(1);
  });
});
