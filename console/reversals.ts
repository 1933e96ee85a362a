/**
 * What the console's ledger offers to reverse (docs/api.md#reversals, contract section 23), on
 * the exact decimal text the service wrote, never through a double. No DOM here, so that Node
 * tests load it (test/console-reverse.test.ts).
 *
 * The console cannot see a transaction's `source`: it offers "Reverse" on every entry but a
 * reversal (`reversalOf` set), an expiry (a debit whose `metadata.reason` is `credits_expired`
 * or `plan_credits_expired`, src/ledger/expiry.ts), a half of a transfer (`transferId` set) and
 * an entry already wholly reversed; the API's `NOT_REVERSIBLE` answers for any other entry it
 * refuses. The amount offered
 * is the entry's amount less its reversals so far; for a credit the API caps it further (what is
 * left of its grant, the account's `available`) and says so with `details.reversible`.
 */
import type { LosslessNumber } from "lossless-json";
import { compareAmounts, subtractAmounts } from "../src/client/amounts.ts";

/** A number as the API wrote it (api.ts's `Num`), or a literal of the console. */
type Figure = LosslessNumber | number | string;

/** What the console reads of a ledger entry to decide (types.ts's `Transaction`). */
export interface LedgerEntry {
  type: "credit" | "debit";
  amount: Figure;
  metadata?: Record<string, unknown> | null | undefined;
  reversalOf?: string | null | undefined;
  amountReversed?: Figure | null | undefined;
  transferId?: string | null | undefined;
}

/** The `metadata.reason` of the debits that expire credits (src/ledger/expiry.ts). */
const EXPIRY_REASONS: ReadonlySet<string> = new Set(["credits_expired", "plan_credits_expired"]);

/** Whether `entry` is a reversal of another entry. */
export function isReversal(entry: LedgerEntry): boolean {
  return typeof entry.reversalOf === "string" && entry.reversalOf !== "";
}

/** Whether `entry` is the expiry of a grant's credits, which cannot be reversed. */
export function isExpiry(entry: LedgerEntry): boolean {
  const reason = entry.metadata?.reason;
  return entry.type === "debit" && typeof reason === "string" && EXPIRY_REASONS.has(reason);
}

/** Whether `entry` is a half of a transfer (docs/api.md#transfers), which cannot be reversed. */
export function isTransfer(entry: LedgerEntry): boolean {
  return typeof entry.transferId === "string" && entry.transferId !== "";
}

/** Whether a decimal literal of the API is more than 0. */
export function isPositive(value: Figure | null | undefined): boolean {
  if (value === null || value === undefined) return false;
  try {
    return compareAmounts(String(value), "0") > 0;
  } catch {
    return false;
  }
}

/**
 * The entry's amount less its reversals so far, exact, as a decimal literal: `10` less `2.5`
 * is `7.5`; `"0"` when nothing is left.
 */
export function leftToReverse(entry: LedgerEntry): string {
  const amount = String(entry.amount);
  const reversed = String(entry.amountReversed ?? 0);
  // Equal amounts are 0 here (`subtractAmounts` is not asked for a zero with decimals).
  if (compareAmounts(amount, reversed) <= 0) return "0";
  return String(subtractAmounts(amount, reversed));
}

/**
 * The amount the console's "Reverse" is prefilled with: what is left of the entry to reverse;
 * null when the console offers no "Reverse" on it (a reversal, an expiry, a transfer's half,
 * wholly reversed).
 */
export function reversibleAmount(entry: LedgerEntry): string | null {
  if (isReversal(entry) || isExpiry(entry) || isTransfer(entry)) return null;
  const left = leftToReverse(entry);
  return isPositive(left) ? left : null;
}

/**
 * `details.reversible` of an API error (`REVERSAL_EXCEEDS_ORIGINAL`,
 * `REVERSAL_EXCEEDS_REMAINING`), as its literal; undefined when the error has none.
 */
export function reversibleOf(details: unknown): string | undefined {
  if (!details || typeof details !== "object" || !("reversible" in details)) return undefined;
  const value = (details as { reversible: unknown }).reversible;
  if (typeof value === "number" || typeof value === "string") return String(value);
  // A LosslessNumber of the console's parser (api.ts).
  if (value && typeof value === "object" && "value" in value) {
    const literal = (value as { value: unknown }).value;
    return typeof literal === "string" ? literal : undefined;
  }
  return undefined;
}
