/**
 * The low-balance alert (docs/api.md#event-types, docs/api.md#low-balance-threshold): a
 * `balance.low` event when a committed write takes an account's `available` from at least its
 * `lowBalanceThreshold` to below it; and, in the same place, the automatic top-up's attempt
 * that such a write may queue (auto-topup.ts, docs/api.md#automatic-top-up).
 */

import type { Transaction } from "kysely";
import { crosses, numbers } from "../admission/rule.ts";
import type { DB } from "../db/schema.ts";
import { fromMicros } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import { considerTopUp } from "./auto-topup.ts";
import { findAccountWithBalance } from "./lookup.ts";
import { balanceLowData } from "./schemas.ts";

/** The `balance.low` event. */
export const balanceLow = defineEvent("balance.low", balanceLowData);

/**
 * What a write that may have lowered an account's `available` tells `checkLowBalance`: the
 * `available` at the start of the write, or (when the write did not read it) by how much the
 * whole write lowered it, in micro-credits; and the debit that caused the change, or null (a
 * reservation).
 */
export type LowBalanceCheck = {
  nowMs: number;
  transactionId: string | null;
  /** The member whose write lowered its pool's `available` (docs/api.md#pools-and-members). */
  onBehalfOf?: string | null | undefined;
} & ({ availableBeforeMicros: number } | { loweredByMicros: number });

/** The account a check is about; a threshold left out is read. */
export interface LowBalanceAccount {
  id: string;
  project_id: string;
  low_balance_threshold_micros?: number | null | undefined;
  /** The automatic top-up's threshold while enabled (auto-topup.ts); left out: read. */
  auto_topup_threshold_micros?: number | null | undefined;
}

/**
 * Call once at the end of a write unit that may have lowered an account's `available` (a
 * debit, an expiry, a reservation or its confirm), after every change the unit makes to the
 * account. Fires when `available` went from at least the account's threshold at the start of the
 * unit to below it at the end, and only then: a unit that starts below the threshold never
 * fires, so the event comes once per crossing, and again only after `available` has been back at
 * or above the threshold (by a credit, a release, or a hold that ran out) when a later unit
 * crosses anew. Setting the threshold is not such a write and fires nothing. Reads nothing for an
 * account known to have no threshold, or known to have started the unit below it.
 * @param account the account as the unit read (and, on PostgreSQL, locked) it
 */
export async function checkLowBalance(
  trx: Transaction<DB>,
  account: LowBalanceAccount,
  check: LowBalanceCheck,
): Promise<void> {
  const known = account.low_balance_threshold_micros;
  const topUp = account.auto_topup_threshold_micros;
  if (known === null && topUp === null) return;
  if ("loweredByMicros" in check && check.loweredByMicros <= 0) return;
  if (
    topUp === null &&
    "availableBeforeMicros" in check &&
    known != null &&
    check.availableBeforeMicros < known
  ) {
    return;
  }
  const now = await findAccountWithBalance(trx, account.project_id, account.id, check.nowMs);
  const thresholdMicros = now.account.low_balance_threshold_micros;
  const availableBeforeMicros =
    "availableBeforeMicros" in check
      ? check.availableBeforeMicros
      : now.available + check.loweredByMicros;
  // An enabled automatic top-up may queue an attempt (docs/api.md#automatic-top-up).
  if (now.account.auto_topup_threshold_micros !== null) {
    await considerTopUp(trx, now.account, availableBeforeMicros, now.available, check.nowMs);
  }
  // The admission rule's low-balance condition (src/admission/rule.ts `crosses`).
  if (thresholdMicros === null) return;
  if (!crosses(numbers, thresholdMicros, availableBeforeMicros, now.available)) return;
  await balanceLow.emit(trx, {
    projectId: account.project_id,
    nowMs: check.nowMs,
    data: {
      accountId: now.account.id,
      externalId: now.account.external_id,
      balance: fromMicros(now.balance),
      reserved: fromMicros(now.reserved),
      available: fromMicros(now.available),
      threshold: fromMicros(thresholdMicros),
      transactionId: check.transactionId,
      ...(check.onBehalfOf == null ? {} : { onBehalfOf: check.onBehalfOf }),
    },
  });
}
