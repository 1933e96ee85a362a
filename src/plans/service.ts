/**
 * Plans and their assignment to accounts (docs/api.md#endpoints, docs/api.md#plans-and-grants). Plans are archived,
 * never deleted. An account has at most one active assignment; assigning replaces it.
 */
import type { Kysely, Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { fundedByParent } from "../accounts/placement.ts";
import { locksRows } from "../db/engine.ts";
import { projectRow } from "../db/project-row.ts";
import type { AccountPlanRow, DB, PlanInterval, PlanRow, StartMode } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { addIntervals, assignmentExpiresAt, nextGrantAt } from "./schedule.ts";
import { endAssignment, grantNextPeriod, settleDue } from "./settlement.ts";

export interface CreatePlanInput {
  name: string;
  creditsMicros: number;
  interval: PlanInterval;
  occurrences: number | null;
  accumulate: boolean;
  isActive: boolean;
  description: string;
  priceMicros: number;
  billingPeriod: string;
}

export async function createPlan(
  trx: Transaction<DB>,
  projectId: string,
  input: CreatePlanInput,
  nowMs: number,
): Promise<PlanRow> {
  const row: PlanRow = {
    id: newId("plan"),
    project_id: projectId,
    name: input.name,
    description: input.description,
    credits_micros: input.creditsMicros,
    price_micros: input.priceMicros,
    billing_period: input.billingPeriod,
    interval: input.interval,
    occurrences: input.occurrences,
    accumulate: input.accumulate ? 1 : 0,
    is_active: input.isActive ? 1 : 0,
    created_at_ms: nowMs,
    updated_at_ms: nowMs,
  };
  await trx.insertInto("plans").values(row).execute();
  return row;
}

/** The project's plans, oldest first. */
export function listPlans(db: Kysely<DB>, projectId: string) {
  return db
    .selectFrom("plans")
    .selectAll()
    .where("project_id", "=", projectId)
    .orderBy("created_at_ms")
    .orderBy("id")
    .execute();
}

/** @throws ApiError PLAN_NOT_FOUND (also for another project's plan) */
export async function findPlan(db: Kysely<DB> | Transaction<DB>, projectId: string, id: string) {
  const row = await projectRow(db.selectFrom("plans"), projectId, id)
    .selectAll()
    .executeTakeFirst();
  if (!row) throw new ApiError("PLAN_NOT_FOUND", `Plan ${id} not found`);
  return row;
}

/** Archives (isActive false) or re-activates a plan. @throws ApiError PLAN_NOT_FOUND */
export async function setPlanActive(
  trx: Transaction<DB>,
  projectId: string,
  planId: string,
  active: boolean,
  nowMs: number,
): Promise<PlanRow> {
  const plan = await findPlan(trx, projectId, planId);
  const is_active = active ? 1 : 0;
  await trx
    .updateTable("plans")
    .set({ is_active, updated_at_ms: nowMs })
    .where("id", "=", plan.id)
    .execute();
  return { ...plan, is_active, updated_at_ms: nowMs };
}

/**
 * Assigns a plan to an account, ending its active assignment (docs/api.md#plans-and-grants). `immediate` grants
 * the first period now; `next_interval` grants nothing now and takes over the replaced
 * assignment's next grant time (or one interval from now when there is none).
 * @throws ApiError ACCOUNT_NOT_FOUND, PLAN_NOT_FOUND, PLAN_INACTIVE, BALANCE_LIMIT_EXCEEDED,
 *   FUNDED_BY_PARENT (docs/api.md#pools-and-members: its pool holds its credits)
 */
export async function assignPlan(
  trx: Transaction<DB>,
  projectId: string,
  input: { accountRef: string; planId: string; startMode: StartMode },
  nowMs: number,
) {
  const account = await findAccount(trx, projectId, input.accountRef);
  if (account.funding === "parent") throw fundedByParent(account, "plans credit its pool");
  const plan = await findPlan(trx, projectId, input.planId);
  if (plan.is_active !== 1) throw new ApiError("PLAN_INACTIVE", `Plan ${plan.id} is archived`);
  const active = await trx
    .selectFrom("account_plans")
    .selectAll()
    .where("account_id", "=", account.id)
    .where("active", "=", 1)
    .executeTakeFirst();
  // The replaced assignment first gets the periods already due (never lost, never backdated to
  // the new plan); its next grant time after that is what next_interval carries over.
  const previous = active ? (await settleDue(trx, active, nowMs)).ap : undefined;
  if (previous && previous.active === 1) await endAssignment(trx, previous, "replaced", nowMs);
  const anchor =
    input.startMode === "immediate"
      ? nowMs
      : (previous?.next_grant_at_ms ?? addIntervals(nowMs, plan.interval, 1));
  let ap: AccountPlanRow = {
    id: newId("ap"),
    project_id: projectId,
    account_id: account.id,
    plan_id: plan.id,
    active: 1,
    start_mode: input.startMode,
    started_at_ms: nowMs,
    anchor_at_ms: anchor,
    grants_made: 0,
    next_grant_at_ms: nextGrantAt(anchor, plan.interval, 0, plan.occurrences),
    expires_at_ms: assignmentExpiresAt(anchor, plan.interval, plan.occurrences),
    cancelled_at_ms: null,
    ended_at_ms: null,
    end_reason: null,
    created_at_ms: nowMs,
  };
  await trx.insertInto("account_plans").values(ap).execute();
  if (input.startMode === "immediate") ap = await grantNextPeriod(trx, ap, plan, nowMs);
  return { ap, plan };
}

/**
 * Cancels an active assignment; credits already granted stay.
 * @throws ApiError ACCOUNT_PLAN_NOT_FOUND, ACCOUNT_PLAN_NOT_ACTIVE
 */
export async function cancelAssignment(
  trx: Transaction<DB>,
  projectId: string,
  accountPlanId: string,
  nowMs: number,
) {
  const byId = () =>
    projectRow(trx.selectFrom("account_plans"), projectId, accountPlanId)
      .selectAll()
      .executeTakeFirst();
  let ap = await byId();
  if (!ap) throw new ApiError("ACCOUNT_PLAN_NOT_FOUND", `Account plan ${accountPlanId} not found`);
  if (locksRows(trx)) {
    // On PostgreSQL every change to an account's assignments holds the account's row lock,
    // taken before the assignment is read (again): a concurrent grant or assignment is over.
    await findAccount(trx, projectId, ap.account_id);
    ap = (await byId()) ?? ap;
  }
  // Periods due before the cancellation are granted; an assignment whose last period is over
  // has completed and can no longer be cancelled.
  const settled = ap.active === 1 ? (await settleDue(trx, ap, nowMs)).ap : ap;
  if (settled.active !== 1) {
    throw new ApiError("ACCOUNT_PLAN_NOT_ACTIVE", "The assignment is no longer active");
  }
  const ended = await endAssignment(trx, settled, "cancelled", nowMs);
  const plan = await findPlan(trx, projectId, ap.plan_id);
  return { ap: ended, plan };
}

/** Every assignment of the account, newest first, with its plan. */
export async function listAccountPlans(db: Kysely<DB>, accountId: string) {
  const rows = await db
    .selectFrom("account_plans")
    .innerJoin("plans", "plans.id", "account_plans.plan_id")
    .selectAll("account_plans")
    .select([
      "plans.name as plan_name",
      "plans.credits_micros as plan_credits_micros",
      "plans.interval as plan_interval",
    ])
    .where("account_plans.account_id", "=", accountId)
    .orderBy("account_plans.created_at_ms", "desc")
    .orderBy("account_plans.id", "desc")
    .execute();
  return rows;
}
