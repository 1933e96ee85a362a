/**
 * Plans and account plans over HTTP (docs/api.md#plans-and-grants): shapes, defaults,
 * validation, archive/activate, assign/replace/cancel, and grants of archived plans.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runGrantPlans } from "../src/jobs/grant-plans.ts";
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
  const res = await t.api("POST", "/v1/plans/create", { body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.plan as { id: string; name: string; credits: number; isActive: boolean };
}

async function balance(ref: string): Promise<number> {
  const res = await t.api("GET", `/v1/accounts/balance?externalId=${ref}`);
  expect(res.status).toBe(200);
  return res.body.balance;
}

// biome-ignore lint/suspicious/noExplicitAny: transactions are inspected field by field.
async function transactions(ref: string): Promise<any[]> {
  const res = await t.api("GET", `/v1/transactions?externalId=${ref}&limit=500`);
  expect(res.status).toBe(200);
  return res.body.items;
}

async function accountPlans(ref: string) {
  const res = await t.api("GET", `/v1/accounts/plans?accountId=${ref}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.success).toBe(true);
  // biome-ignore lint/suspicious/noExplicitAny: inspected field by field.
  return res.body.plans as any[];
}

describe("POST /v1/plans/create", () => {
  it("returns {success, plan:{id, name, credits, interval, isActive}} with amount as credits", async () => {
    const res = await t.api("POST", "/v1/plans/create", {
      body: { name: "Pro", amount: 250.5, interval: "month", occurrences: null },
    });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.plan).toMatchObject({
      name: "Pro",
      credits: 250.5,
      interval: "month",
      isActive: true,
    });
    expect(typeof res.body.plan.id).toBe("string");
    expect(res.body.plan.id.length).toBeGreaterThan(0);
  });

  it("applies the defaults: accumulate, markAsActive, description, price, billingPeriod", async () => {
    const plan = await createPlan({ name: "Daily", amount: 10, interval: "1d" });
    expect(plan).toMatchObject({ isActive: true, accumulate: true });
    const list = await t.api("GET", "/v1/plans");
    expect(list.status).toBe(200);
    expect(list.body.success).toBe(true);
    expect(list.body.plans).toHaveLength(1);
    expect(list.body.plans[0]).toMatchObject({
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
    const list = await t.api("GET", "/v1/plans");
    expect(list.body.plans[0]).toEqual(
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
    const res = await t.api("POST", "/v1/plans/create", { body });
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    const list = await t.api("GET", "/v1/plans");
    expect(list.body.plans).toEqual([]);
  });

  it("accepts occurrences null and a positive integer", async () => {
    await createPlan({ name: "Unlimited", amount: 1, interval: "1d", occurrences: null });
    await createPlan({ name: "Three", amount: 1, interval: "1d", occurrences: 3 });
    const list = await t.api("GET", "/v1/plans");
    expect(list.body.plans.map((p: { name: string }) => p.name)).toEqual(["Unlimited", "Three"]);
  });
});

describe("archive and activate", () => {
  it("toggles isActive and shows it in the list", async () => {
    const plan = await createPlan({ name: "P", amount: 5, interval: "1d" });
    const archived = await t.api("POST", "/v1/plans/archive", { body: { planId: plan.id } });
    expect(archived.status).toBe(200);
    expect(archived.body).toMatchObject({ success: true, plan: { id: plan.id, isActive: false } });
    expect((await t.api("GET", "/v1/plans")).body.plans[0].isActive).toBe(false);
    const active = await t.api("POST", "/v1/plans/activate", { body: { planId: plan.id } });
    expect(active.status).toBe(200);
    expect(active.body).toMatchObject({ success: true, plan: { id: plan.id, isActive: true } });
    expect((await t.api("GET", "/v1/plans")).body.plans[0].isActive).toBe(true);
  });

  it("404 PLAN_NOT_FOUND for an unknown plan (archive, activate, assign)", async () => {
    await fundedAccount(t, "u1");
    for (const path of ["/v1/plans/archive", "/v1/plans/activate"]) {
      const res = await t.api("POST", path, { body: { planId: "plan_nope" } });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("PLAN_NOT_FOUND");
    }
    const res = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: "plan_nope" },
    });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("PLAN_NOT_FOUND");
  });

  it("another project's plan is PLAN_NOT_FOUND", async () => {
    const plan = await createPlan({ name: "Mine", amount: 5, interval: "1d" });
    const other = await t.newProject("other");
    const res = await t.api("POST", "/v1/plans/archive", {
      body: { planId: plan.id },
      key: other.key,
    });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("PLAN_NOT_FOUND");
    expect((await t.api("GET", "/v1/plans", { key: other.key })).body.plans).toEqual([]);
  });

  it("assigning an archived plan is 409 PLAN_INACTIVE and grants nothing", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "P", amount: 5, interval: "1d" });
    await t.api("POST", "/v1/plans/archive", { body: { planId: plan.id } });
    const res = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: plan.id },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("PLAN_INACTIVE");
    expect(await balance("u1")).toBe(0);
    expect(await accountPlans("u1")).toEqual([]);
  });
});

describe("account plans", () => {
  it("assign (immediate by default) grants at once with a credit naming plan and assignment", async () => {
    const accountId = await fundedAccount(t, "u1", 5);
    const plan = await createPlan({ name: "Pro", amount: 100, interval: "month" });
    const res = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: plan.id },
    });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const ap = res.body.accountPlan;
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
    expect(grants[0].metadata.accountPlanId).toBe(ap.id);
    expect(await t.verify()).toEqual([]);
  });

  it("lists assignments with the embedded plan and schedule fields", async () => {
    const accountId = await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "Pro", amount: 100, interval: "1d", occurrences: 5 });
    const assigned = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId, planId: plan.id, startMode: "immediate" },
    });
    const plans = await accountPlans(accountId);
    expect(plans).toHaveLength(1);
    expect(plans[0]).toMatchObject({
      id: assigned.body.accountPlan.id,
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
    expect((await accountPlans("u1"))[0].id).toBe(assigned.body.accountPlan.id);
  });

  it("unlimited plan: expiresAt is null", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "U", amount: 1, interval: "week", occurrences: null });
    await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: plan.id },
    });
    const [ap] = await accountPlans("u1");
    expect(ap.expiresAt).toBeNull();
    expect(ap.nextGrantAt).toBe(new Date(Date.parse(START) + 7 * DAY).toISOString());
  });

  it("assigning a second plan makes the first inactive; both stay listed", async () => {
    await fundedAccount(t, "u1");
    const a = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const b = await createPlan({ name: "B", amount: 20, interval: "1d" });
    const first = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: a.id },
    });
    t.advance(60_000);
    const second = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: b.id },
    });
    expect(second.status).toBe(200);
    const plans = await accountPlans("u1");
    expect(plans).toHaveLength(2);
    const byId = new Map(plans.map((p) => [p.id, p]));
    expect(byId.get(first.body.accountPlan.id)).toMatchObject({ planId: a.id, active: false });
    expect(byId.get(second.body.accountPlan.id)).toMatchObject({ planId: b.id, active: true });
    expect(plans.filter((p) => p.active)).toHaveLength(1);
    expect(await balance("u1")).toBe(30); // replacing keeps A's granted credits
    // The replaced plan grants no more; the new one keeps granting.
    t.advance(DAY);
    await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(await balance("u1")).toBe(50);
    expect(await t.verify()).toEqual([]);
  });

  it("assign to an unknown account is 404 ACCOUNT_NOT_FOUND", async () => {
    const plan = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const res = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "ghost", planId: plan.id },
    });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("ACCOUNT_NOT_FOUND");
  });

  it("rejects an unknown startMode with 400", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const res = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: plan.id, startMode: "later" },
    });
    expect(res.status).toBe(400);
    expect(await balance("u1")).toBe(0);
  });

  it("cancel: response shape, credits stay, no more grants, second cancel 409", async () => {
    const accountId = await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const assigned = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: plan.id },
    });
    const apId = assigned.body.accountPlan.id;
    t.advance(3_600_000);
    const res = await t.api("POST", "/v1/accounts/plans/cancel", {
      body: { accountPlanId: apId },
    });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.accountPlan).toMatchObject({
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
      cancelledAt: res.body.accountPlan.cancelledAt,
    });

    t.advance(5 * DAY);
    const run = await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(run.grants).toBe(0);
    expect(await balance("u1")).toBe(10);

    const again = await t.api("POST", "/v1/accounts/plans/cancel", {
      body: { accountPlanId: apId },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("ACCOUNT_PLAN_NOT_ACTIVE");
    expect(await t.verify()).toEqual([]);
  });

  it("cancelling a replaced assignment is 409; an unknown one is 404", async () => {
    await fundedAccount(t, "u1");
    const a = await createPlan({ name: "A", amount: 10, interval: "1d" });
    const first = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: a.id },
    });
    await t.api("POST", "/v1/accounts/plans/assign", { body: { accountId: "u1", planId: a.id } });
    const replaced = await t.api("POST", "/v1/accounts/plans/cancel", {
      body: { accountPlanId: first.body.accountPlan.id },
    });
    expect(replaced.status).toBe(409);
    expect(replaced.body.error.code).toBe("ACCOUNT_PLAN_NOT_ACTIVE");
    const unknown = await t.api("POST", "/v1/accounts/plans/cancel", {
      body: { accountPlanId: "ap_nope" },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("ACCOUNT_PLAN_NOT_FOUND");
  });

  it("an archived plan's existing assignments keep granting", async () => {
    await fundedAccount(t, "u1");
    const plan = await createPlan({ name: "A", amount: 7, interval: "1d" });
    const assigned = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: "u1", planId: plan.id },
    });
    expect((await t.api("POST", "/v1/plans/archive", { body: { planId: plan.id } })).status).toBe(
      200,
    );
    t.advance(DAY);
    const run = await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(run).toEqual({ grants: 1, completed: 0, failed: 0 });
    t.advance(DAY);
    await runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
    expect(await balance("u1")).toBe(21);
    const [ap] = await accountPlans("u1");
    expect(ap).toMatchObject({ id: assigned.body.accountPlan.id, active: true, grantsMade: 3 });
    expect(await t.verify()).toEqual([]);
  });

  it("GET /v1/accounts/plans needs an account (400) that exists (404)", async () => {
    expect((await t.api("GET", "/v1/accounts/plans")).status).toBe(400);
    const res = await t.api("GET", "/v1/accounts/plans?accountId=ghost");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("ACCOUNT_NOT_FOUND");
  });
});
