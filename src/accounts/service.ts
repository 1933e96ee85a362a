/**
 * Account rules (docs/api.md#endpoints, docs/api.md#accounts): create with a unique externalId per project, list,
 * look up by internal id or externalId, and the balance view.
 */
import type { Kysely, Transaction } from "kysely";
import type { AccountRow, DB } from "../db/schema.ts";
import { EMPTY_SLOTS } from "../db/slot-columns.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import { rebuildCounters } from "../limits/counters.ts";
import { limitsText, type SpendLimit } from "../limits/limits.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";
import { findAccount, findAccountByExternalId, readBalance } from "./lookup.ts";
import { type PlacementInput, placeExisting, placeNew, poolIdOf } from "./placement.ts";
import type { balanceSchema } from "./schemas.ts";
import { accountMatches } from "./search.ts";

/** The fields of an account that a request sets, on create and on update alike. */
interface AccountFields {
  name?: string | undefined;
  email?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /**
   * The account's Stripe customer (docs/api.md#selling-credits-through-stripe), unique in the
   * project; null (on update) removes it.
   */
  stripeCustomerId?: string | null | undefined;
}

export interface CreateAccountInput extends AccountFields, PlacementInput {
  externalId: string;
  /** Micro-credits; null or left out: none. */
  lowBalanceThreshold?: number | null | undefined;
  /** The account's spend limits (docs/api.md#spend-limits); null or left out: none. */
  spendLimits?: readonly SpendLimit[] | undefined;
}

export interface UpdateAccountInput extends AccountFields, PlacementInput {
  accountRef: string;
  /** Micro-credits; null removes the threshold; left out keeps it. */
  lowBalanceThreshold?: number | null | undefined;
  /** Replaces the whole list (`[]` removes every limit); left out keeps it. */
  spendLimits?: readonly SpendLimit[] | undefined;
}

/**
 * Creates an account with balance 0, under `parentId` when given (placement.ts `placeNew`).
 * @throws ApiError DUPLICATE_EXTERNAL_ID when the project already has that externalId; as
 *   `placeNew`
 */
export async function createAccount(
  trx: Transaction<DB>,
  projectId: string,
  input: CreateAccountInput,
  nowMs: number,
): Promise<AccountRow> {
  const taken = await trx
    .selectFrom("accounts")
    .select("id")
    .where("project_id", "=", projectId)
    .where("external_id", "=", input.externalId)
    .executeTakeFirst();
  if (taken) {
    throw new ApiError("DUPLICATE_EXTERNAL_ID", `externalId ${input.externalId} is already used`);
  }
  if (input.stripeCustomerId != null) {
    await requireFreeCustomer(trx, projectId, input.stripeCustomerId, undefined);
  }
  const placement = await placeNew(trx, projectId, input);
  const row = {
    id: newId("acc"),
    project_id: projectId,
    external_id: input.externalId,
    name: input.name ?? "",
    email: input.email ?? "",
    metadata: input.metadata === undefined ? null : stringifyJson(input.metadata),
    balance_micros: 0,
    plan_bucket_micros: 0,
    plan_bucket_account_plan_id: null,
    created_at_ms: nowMs,
    updated_at_ms: nowMs,
    low_balance_threshold_micros: input.lowBalanceThreshold ?? null,
    spend_limits: limitsText(input.spendLimits ?? []),
    stripe_customer_id: input.stripeCustomerId ?? null,
    auto_topup_threshold_micros: null,
    ...placement,
    ...EMPTY_SLOTS,
  };
  await trx.insertInto("accounts").values(row).execute();
  return row;
}

/**
 * Refuses a Stripe customer another account of the project has (PostgreSQL: a concurrent
 * writer's is caught by the unique index, and the retried unit refuses it here).
 * @throws ApiError DUPLICATE_STRIPE_CUSTOMER
 */
async function requireFreeCustomer(
  trx: Transaction<DB>,
  projectId: string,
  customerId: string,
  self: string | undefined,
) {
  const holder = await trx
    .selectFrom("accounts")
    .select(["id", "external_id"])
    .where("project_id", "=", projectId)
    .where("stripe_customer_id", "=", customerId)
    .executeTakeFirst();
  if (holder !== undefined && holder.id !== self) {
    throw new ApiError(
      "DUPLICATE_STRIPE_CUSTOMER",
      `stripeCustomerId ${customerId} is already used by account ${holder.external_id}`,
    );
  }
}

/**
 * Changes the fields given, and only those (docs/api.md#low-balance-threshold): `metadata` is
 * replaced whole. Changing the threshold fires no event, whatever the balance. `spendLimits`
 * replaces the whole list and rebuilds the account's window counters from the ledger
 * (src/limits/counters.ts); it changes no booked row and fires nothing. `parentId` moves the
 * account and `funding` switches who pays (placement.ts `placeExisting`).
 * @returns the account as updated
 * @throws ApiError ACCOUNT_NOT_FOUND; as `placeExisting`
 */
export async function updateAccount(
  trx: Transaction<DB>,
  projectId: string,
  input: UpdateAccountInput,
  nowMs: number,
): Promise<AccountRow> {
  const account = await findAccount(trx, projectId, input.accountRef);
  const changes: Partial<AccountRow> = await placeExisting(trx, account, input, nowMs);
  if (input.name !== undefined) changes.name = input.name;
  if (input.email !== undefined) changes.email = input.email;
  if (input.metadata !== undefined) changes.metadata = stringifyJson(input.metadata);
  if (
    input.stripeCustomerId !== undefined &&
    input.stripeCustomerId !== account.stripe_customer_id
  ) {
    if (input.stripeCustomerId !== null) {
      await requireFreeCustomer(trx, projectId, input.stripeCustomerId, account.id);
    }
    changes.stripe_customer_id = input.stripeCustomerId;
  }
  if (input.lowBalanceThreshold !== undefined && changes.low_balance_threshold_micros !== null) {
    changes.low_balance_threshold_micros = input.lowBalanceThreshold;
  }
  if (input.spendLimits !== undefined) {
    changes.spend_limits = limitsText(input.spendLimits);
    await rebuildCounters(trx, account.id, input.spendLimits, nowMs);
  }
  if (Object.keys(changes).length === 0) return account;
  const updatedAt = Math.max(account.updated_at_ms, nowMs);
  await trx
    .updateTable("accounts")
    .set({ ...changes, updated_at_ms: updatedAt })
    .where("id", "=", account.id)
    .execute();
  const updated = { ...account, ...changes, updated_at_ms: updatedAt };
  return updated;
}

/**
 * A page of the project's accounts, oldest first, with the total count; with `search`, only
 * those whose externalId or name contains it (src/accounts/search.ts); with `parentId`, only
 * the children of that account.
 * @throws ApiError ACCOUNT_NOT_FOUND for an unknown `parentId`
 */
export async function listAccounts(
  db: Kysely<DB>,
  projectId: string,
  page: {
    limit: number;
    offset: number;
    search?: string | undefined;
    parentId?: string | undefined;
  },
) {
  let accounts = db.selectFrom("accounts").where("project_id", "=", projectId);
  if (page.search !== undefined) accounts = accounts.where(accountMatches(db, page.search));
  if (page.parentId !== undefined) {
    const parent = await findAccount(db, projectId, page.parentId, { lock: false });
    accounts = accounts.where("parent_id", "=", parent.id);
  }
  const rows = await accounts
    .selectAll()
    .orderBy("created_at_ms")
    .orderBy("id")
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const { count } = await accounts
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  return { rows, totalCount: Number(count) };
}

/** An account named by a query: by `accountId` (internal id or externalId), `externalId`, or both. */
export interface AccountQuery {
  accountId?: string | undefined;
  externalId?: string | undefined;
}

/**
 * The account named by a query: `accountId` (internal id or externalId) or `externalId`. When
 * both are given they must name the same account (docs/api.md, "Accounts").
 * @throws ApiError ACCOUNT_NOT_FOUND; VALIDATION_ERROR when `accountId` and `externalId` name
 *   two different accounts
 */
export async function resolveAccount(
  db: Kysely<DB> | Transaction<DB>,
  projectId: string,
  ref: AccountQuery,
): Promise<AccountRow> {
  const account =
    ref.accountId === undefined
      ? await findAccountByExternalId(db, projectId, ref.externalId ?? "")
      : await findAccount(db, projectId, ref.accountId);
  requireSameAccount(account, ref);
  return account;
}

/**
 * The Balance view (docs/api.md#endpoints) at `nowMs` of the account a query names, read in one
 * query with its holds; for an account funded by its parent, its pool's figures
 * (docs/api.md#pools-and-members), with `fundedBy` naming the pool.
 * @throws ApiError as `resolveAccount`
 */
export async function balanceView(
  db: Kysely<DB>,
  projectId: string,
  ref: AccountQuery,
  nowMs: number,
): Promise<WireOf<typeof balanceSchema>> {
  const { account, balance, reserved, available } =
    ref.accountId === undefined
      ? await readBalance(db, projectId, ref.externalId ?? "", nowMs, { externalId: true })
      : await readBalance(db, projectId, ref.accountId, nowMs, { externalId: false });
  requireSameAccount(account, ref);
  if (account.funding === "parent") {
    const pool = await poolIdOf(db, account);
    const figures = await readBalance(db, projectId, pool, nowMs, { externalId: false });
    return {
      accountId: account.id,
      externalId: account.external_id,
      balance: fromMicros(figures.balance),
      reserved: fromMicros(figures.reserved),
      available: fromMicros(figures.available),
      fundedBy: pool,
    };
  }
  return {
    accountId: account.id,
    externalId: account.external_id,
    balance: fromMicros(balance),
    reserved: fromMicros(reserved),
    available: fromMicros(available),
    fundedBy: account.id,
  };
}

/** @throws ApiError VALIDATION_ERROR when the query's `externalId` is not `account`'s */
function requireSameAccount(account: Pick<AccountRow, "external_id">, ref: AccountQuery): void {
  if (ref.accountId !== undefined && ref.externalId !== undefined) {
    if (ref.externalId !== account.external_id) {
      throw new ApiError("VALIDATION_ERROR", "accountId and externalId name different accounts", [
        { path: "query.externalId", message: "names another account than accountId" },
      ]);
    }
  }
}
