/**
 * Plans and account plans over HTTP (docs/api.md#plans-and-grants): shapes, defaults,
 * validation, archive/activate, assign/replace/cancel, and grants of archived plans.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import type { ErrorCode } from "../src/errors.ts";
import { runGrantPlans } from "../src/jobs/grant-plans.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const DAY = 86_400_000;
const START = "2026-01-31T09:00:00.000Z";

let t: TestLedger;
beforeEach(async () => {
  t = await makeLedger({ fakeClock: START });
});
afterEach(async () => {
  await t.close();
});

async function createPlan(body: Record<string, unknown>) {
  return (await t.call(planRoutes.create, { body })).plan;
}

async function balance(ref: string): Promise<number> {
  return (await t.call(accountRoutes.balance, { query: { externalId: ref } })).balance;
}

async function transactions(ref: string) {
  return (await t.call(transactionRoutes.list, { query: { externalId: ref, limit: 500 } })).items;
}

async function accountPlans(ref: string) {
  const body = await t.call(planRoutes.listAssigned, { query: { accountId: ref } });
  expect(body.success).toBe(true);
  return body.plans;
}

const plans = async (key?: string) => (await t.call(planRoutes.list, { key })).plans;

const assign = (body: Record<string, unknown>) => t.call(planRoutes.assign, { body });
const assignFails = (body: Record<string, unknown>, status: number, code: ErrorCode) =>
  t.fail(planRoutes.assign, { body }, status, code);
const cancelFails = (accountPlanId: string, status: number, code: ErrorCode) =>
  t.fail(planRoutes.cancel, { body: { accountPlanId } }, status, code);

describe("POST /v1/plans/create", () => {
  it("returns {success, plan:{id, name, credits, interval, isActive}} with amount as credits", async () => {
    const res = await t.call(planRoutes.create, {
      body: { name: "Pro", amount: 250.5, interval: "month", occurrences: null },
    });
    expect(res.success).toBe(true);
    expect(res.plan).toMatchObject({
      name: "Pro",
      credits: 250.5,
      interval: "month",
      isActive: true,
    });
    expect(typeof res.plan.id).toBe("string");
    expect(res.plan.id.length).toBeGreaterThan(0);
  });

  it("applies the defaults: accumulate, markAsActive, description, price, billingPeriod", async () => {
    const plan = await createPlan({ name: "Daily", amount: 10, interval: "1d" });
    expect(plan).toMatchObject({ isActive: true, accumulate: true });
    const list = await t.call(planRoutes.list);
    expect(list.success).toBe(true);
    expect(list.plans).toHaveLength(1);
    expect(list.plans[0]).toMatchObject({
      id: plan.id,
      name: "Daily",
      description: "",
      credits: 10,
      price: 0,
      billingPeriod: "1d",
      isActive: true,
    });
  });

  it("keeps given description, price, billingPeriod and markAsActive false", async () => {
    const plan = await createPlan({
      name: "Team",
      amount: 1000,
      interval: "week",
      description: "Weekly team credits",
      price: 19.99,
      billingPeriod: "monthly",
      markAsActive: false,
      accumulate: false,
      occurrences: 4,
    });
    expect(plan.isActive).toBe(false);
    expect((await plans())[0]).toEqual(
      expect.objectContaining({
        id: plan.id,
        name: "Team",
        description: "Weekly team credits",
        credits: 1000,
        price: 19.99,
        billingPeriod: "monthly",
        isActive: false,
      }),
    );
  });

  it.each([
    ["amount 0", { amount: 0 }],
    ["negative amount", { amount: -5 }],
    ["amount with 7 decimals", { amount: 1.0000001 }],
    ["interval year", { interval: "year" }],
    ["occurrences 0", { occurrences: 0 }],
    ["occurrences 1.5", { occurrences: 1.5 }],
    ["missing name", { name: undefined }],
  ])("rejects %s with 400 VALIDATION_ERROR and creates nothing", async (_label, patch) => {
    const body = { name: "Bad", amount: 10, interval: "1d", ...patch };
    await t.fail(planRoutes.create, { body }, 400, "VALIDATION_ERROR");
    expect(await plans()).toEqual([]);
  });

  it("accepts occurrences null and a positive integer", async () => {
    await createPlan({ name: "Unlimited", amount: 1, interval: "1d", occurrences: null });
    await createPlan({ name: "Three", amount: 1, interval: "1d", occurrences: 3 });
    expect((await plans()).map((p) => p.name)).toEqual(["Unlimited", "Three"]);
  });
});

describe("archive and activate", () => {
  it("toggles isActive and shows it in the list", async () => {
    const plan = await createPlan({ name: "P", amount: 5, interval: "1d" });
    const archived = await t.call(planRoutes.archive, { body: { planId: plan.id } });
    expect(archived).toMatchObject({ success: true, plan: { id: plan.id, isActive: false } });
    expect((await plans())[0]?.isActive).toBe(false);
    const active = await t.call(planRoutes.activate, { body: { planId: plan.id } });
    expect(active).toMatchObject({ success: true, plan: { id: plan.id, isActive: true } });
    expect((await plans())[0]?.isActive).toBe(true);
  });

  it("404 PLAN_NOT_FOUND for an unknown plan (archive, activate, assign)", async () => {
    await fundedAccount(t, "u1");
    for (const route of [planRoutes.archive, planRoutes.activate]) {
      await t.fail(route, { body: { planId: "plan_nope" } }, 404, "PLAN_NOT_FOUND");
    }
    await assignFails({ accountId: "u1", planId: "plan_nope" }, 404, "PLAN_NOT_FOUND");
  });

  it("another project's plan is PLAN_NOT_FOUND", async () => {
    const plan = await createPlan({ name: "Mine", amount: 5, interval: "1d" });
    const other = await t.newProject("other");
    await t.fail(
      planRoutes.archive,
      { body: { planId: plan.id }, key: other.key },
      404,
      "PLAN_NOT_FOUND",
    );
    expect(await plans(other.key)).toEqual([]);
  });

  it("assigning an archived plan is 409 PLAN_INACTIVE and grants nothing", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "P", amount: 5, interval: "1d" });
    await t.call(planRoutes.archive, { body: { planId: plan.id } });
    await assignFails({ accountId: "u1", planId: plan.id }, 409, "PLAN_INACTIVE");
    expect(await balance("u1")).toBe(0);
    expect(await accountPlans("u1")).toEqual([]);
  });
});

describe("account plans", () => {
  it("assign (immediate by default) grants at once with a credit naming plan and assignment", async () => {
    const accountId = await fundedAccount(t, "u1", 5);
    const plan = await createPlan({ name: "Pro", amount: 100, interval: "month" });
    const res = await assign({ accountId: "u1", planId: plan.id });
    expect(res.success).toBe(true);
    const ap = res.accountPlan;
    expect(ap).toMatchObject({ accountId, planId: plan.id, active: true, startedAt: START });
    expect(typeof ap.id).toBe("string");
    expect(await balance("u1")).toBe(105);
    const grants = (await transactions("u1")).filter((x) => x.metadata.planId === plan.id);
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({
      type: "credit",
      amount: 100,
      balanceAfter: 105,
      createdAt: START,
    });
    expect(grants[0]?.metadata.accountPlanId).toBe(ap.id);
    expect(await t.verify()).toEqual([]);
  });

  it("lists assignments with the embedded plan and schedule fields", async () => {
    const accountId = await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "Pro", amount: 100, interval: "1d", occurrences: 5 });
    const assigned = await assign({ accountId, planId: plan.id, startMode: "immediate" });
    const listed = await accountPlans(accountId);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      id: assigned.accountPlan.id,
      accountId,
      planId: plan.id,
      active: true,
      startedAt: START,
      nextGrantAt: new Date(Date.parse(START) + DAY).toISOString(),
      grantsMade: 1,
      expiresAt: new Date(Date.parse(START) + 5 * DAY).toISOString(),
      cancelledAt: null,
      plan: { id: plan.id, name: "Pro", credits: 100 },
    });
    // externalId works too
    expect((await accountPlans("u1"))[0]?.id).toBe(assigned.accountPlan.id);
  });

  it("unlimited plan: expiresAt is null", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "U", amount: 1, interval: "week", occurrences: null });
    await assign({ accountId: "u1", planId: plan.id });
    const [ap] = await accountPlans("u1");
    expect(ap?.expiresAt).toBeNull();
    expect(ap?.nextGrantAt).toBe(new Date(Date.parse(START) + 7 * DAY).toISOString());
  });

  it("assigning a second plan makes the first inactive; both stay listed", async () => {
    await fundedAccount(t, "u1");
    const a = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const b = await createPlan({ name: "B", amount: 20, interval: "1d" });
    const first = await assign({ accountId: "u1", planId: a.id });
    t.advance(60_000);
    const second = await assign({ accountId: "u1", planId: b.id });
    const listed = await accountPlans("u1");
    expect(listed).toHaveLength(2);
    const byId = new Map(listed.map((p) => [p.id, p]));
    expect(byId.get(first.accountPlan.id)).toMatchObject({ planId: a.id, active: false });
    expect(byId.get(second.accountPlan.id)).toMatchObject({ planId: b.id, active: true });
    expect(listed.filter((p) => p.active)).toHaveLength(1);
    expect(await balance("u1")).toBe(30); // replacing keeps A's granted credits
    // The replaced plan grants no more; the new one keeps granting.
    t.advance(DAY);
    await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(await balance("u1")).toBe(50);
    expect(await t.verify()).toEqual([]);
  });

  it("assign to an unknown account is 404 ACCOUNT_NOT_FOUND", async () => {
    const plan = await createPlan({ name: "A", amount: 10, interval: "1d" });
    await assignFails({ accountId: "ghost", planId: plan.id }, 404, "ACCOUNT_NOT_FOUND");
  });

  it("rejects an unknown startMode with 400", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "A", amount: 10, interval: "1d" });
    await assignFails(
      { accountId: "u1", planId: plan.id, startMode: "later" },
      400,
      "VALIDATION_ERROR",
    );
    expect(await balance("u1")).toBe(0);
  });

  it("cancel: response shape, credits stay, no more grants, second cancel 409", async () => {
    const accountId = await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const assigned = await assign({ accountId: "u1", planId: plan.id });
    const apId = assigned.accountPlan.id;
    t.advance(3_600_000);
    const res = await t.call(planRoutes.cancel, { body: { accountPlanId: apId } });
    expect(res.success).toBe(true);
    expect(res.accountPlan).toMatchObject({
      id: apId,
      accountId,
      active: false,
      cancelledAt: new Date(t.now()).toISOString(),
    });
    expect(await balance("u1")).toBe(10);
    const [listed] = await accountPlans("u1");
    expect(listed).toMatchObject({
      id: apId,
      active: false,
      cancelledAt: res.accountPlan.cancelledAt,
    });

    t.advance(5 * DAY);
    const run = await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(run.grants).toBe(0);
    expect(await balance("u1")).toBe(10);

    await cancelFails(apId, 409, "ACCOUNT_PLAN_NOT_ACTIVE");
    expect(await t.verify()).toEqual([]);
  });

  it("cancelling a replaced assignment is 409; an unknown one is 404", async () => {
    await fundedAccount(t, "u1");
    const a = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const first = await assign({ accountId: "u1", planId: a.id });
    await assign({ accountId: "u1", planId: a.id });
    await cancelFails(first.accountPlan.id, 409, "ACCOUNT_PLAN_NOT_ACTIVE");
    await cancelFails("ap_nope", 404, "ACCOUNT_PLAN_NOT_FOUND");
  });

  it("an archived plan's existing assignments keep granting", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "A", amount: 7, interval: "1d" });
    const assigned = await assign({ accountId: "u1", planId: plan.id });
    await t.call(planRoutes.archive, { body: { planId: plan.id } });
    t.advance(DAY);
    const run = await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(run).toEqual({ grants: 1, completed: 0, failed: 0 });
    t.advance(DAY);
    await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(await balance("u1")).toBe(21);
    const [ap] = await accountPlans("u1");
    expect(ap).toMatchObject({ id: assigned.accountPlan.id, active: true, grantsMade: 3 });
    expect(await t.verify()).toEqual([]);
  });

  it("GET /v1/accounts/plans needs an account (400) that exists (404)", async () => {
    await t.fail(planRoutes.listAssigned, {}, 400, "VALIDATION_ERROR");
    await t.fail(
      planRoutes.listAssigned,
      { query: { accountId: "ghost" } },
      404,
      "ACCOUNT_NOT_FOUND",
    );
  });
});
