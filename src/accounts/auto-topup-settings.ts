/**
 * `POST /v1/accounts/auto-topup`'s rules (docs/api.md#automatic-top-up): an account's automatic
 * top-up set, checked in the contract's order, and an attempt queued at once when it is turned
 * on while `available` is already below its threshold. Credits in micro-credits.
 */
import type { Transaction } from "kysely";
import type { DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { centsFor, lastAttempt, queueAttempt, readSettings } from "./auto-topup.ts";
import { findAccountWithBalance } from "./lookup.ts";
import { fundedByParent } from "./placement.ts";

/** What the request sets. */
export interface AutoTopupInput {
  accountRef: string;
  enabled: boolean;
  thresholdMicros: number;
  amountMicros: number;
  /** Null or left out: no monthly limit. */
  monthlyLimitMicros?: number | null | undefined;
}

/** The least and most one attempt may charge: 50 cents and $999,999.99 (Stripe's bounds). */
export const MIN_CENTS = 50;
export const MAX_CENTS = 99_999_999;

/**
 * Sets the account's automatic top-up. Checked in order: the amount's price at the project's
 * credit price (50 cents to $999,999.99, when the project has a price), the account funding
 * itself, and, to enable it, the project's Stripe secret key and credit price and the account's
 * `stripeCustomerId`. Turning it on (from off or unset) resets the failures in a row and the
 * disabled reason, and queues an attempt when `available` is already below the threshold.
 * @returns the account (id, externalId)
 * @throws ApiError ACCOUNT_NOT_FOUND; VALIDATION_ERROR (the amount's price); FUNDED_BY_PARENT;
 *   STRIPE_NOT_CONFIGURED
 */
export async function setAutoTopup(
  trx: Transaction<DB>,
  projectId: string,
  input: AutoTopupInput,
  nowMs: number,
) {
  const found = await findAccountWithBalance(trx, projectId, input.accountRef, nowMs);
  const { account } = found;
  const project = await trx
    .selectFrom("projects")
    .select(["credits_per_usd_micros", "stripe_secret_key"])
    .where("id", "=", projectId)
    .executeTakeFirstOrThrow();
  const price = project.credits_per_usd_micros;
  if (price !== null) {
    const cents = centsFor(input.amountMicros, price);
    if (cents < MIN_CENTS || cents > MAX_CENTS) {
      const message = "must cost between $0.50 and $999,999.99 at the project's credit price";
      throw new ApiError("VALIDATION_ERROR", `Invalid body.amount: ${message}`, [
        { path: "body.amount", message },
      ]);
    }
  }
  if (account.funding === "parent") {
    throw fundedByParent(account, "an automatic top-up buys credits for its pool");
  }
  if (input.enabled) requireConfigured(project, account);
  const before = await readSettings(trx, account.id);
  const turnedOn = input.enabled && before?.enabled !== 1;
  const row = {
    account_id: account.id,
    project_id: projectId,
    enabled: input.enabled ? 1 : 0,
    threshold_micros: input.thresholdMicros,
    amount_micros: input.amountMicros,
    monthly_limit_micros: input.monthlyLimitMicros ?? null,
    consecutive_failures: turnedOn ? 0 : (before?.consecutive_failures ?? 0),
    disabled_reason: turnedOn || before === undefined ? null : before.disabled_reason,
    updated_at_ms: Math.max(nowMs, before?.updated_at_ms ?? 0),
  };
  if (before === undefined) {
    await trx.insertInto("auto_topups").values(row).execute();
  } else {
    await trx.updateTable("auto_topups").set(row).where("account_id", "=", account.id).execute();
  }
  await trx
    .updateTable("accounts")
    .set({ auto_topup_threshold_micros: input.enabled ? input.thresholdMicros : null })
    .where("id", "=", account.id)
    .execute();
  if (turnedOn && found.available < input.thresholdMicros) {
    const last = await lastAttempt(trx, account.id);
    if (last?.status !== "pending") await queueAttempt(trx, account, row, nowMs);
  }
  return account;
}

/**
 * What enabling a top-up needs: the project's Stripe secret key and credit price, and the
 * account's Stripe customer.
 * @throws ApiError STRIPE_NOT_CONFIGURED with `details.missing`
 */
function requireConfigured(
  project: { stripe_secret_key: string | null; credits_per_usd_micros: number | null },
  account: { stripe_customer_id: string | null },
) {
  const price = project.credits_per_usd_micros;
  const missing = [
    project.stripe_secret_key === null
      ? "the project's Stripe secret key (ledger stripe set --secret-key)"
      : null,
    price === null ? "the project's credit price (creditsPerUsd)" : null,
    account.stripe_customer_id === null ? "the account's stripeCustomerId" : null,
  ].filter((m): m is string => m !== null);
  if (missing.length > 0) {
    throw new ApiError("STRIPE_NOT_CONFIGURED", `An automatic top-up needs ${missing.join(", ")}`, {
      missing,
    });
  }
}
