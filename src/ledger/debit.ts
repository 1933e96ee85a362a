/**
 * A debit as the service writes it (docs/design.md#plain-writes): a deduction, a manual debit or
 * a reservation's confirm. This module is the one definition of what a debit writes besides the
 * balance move and the grants' draw (core.ts, grants.ts): its ledger entry (amount, description,
 * metadata, source, reservation), what it needs of `available`, and the settling of the hold a
 * confirm ends. Both paths of a debit take them from here: the plain one (plain-debit.ts) and
 * the general one (service.ts, reservations/service.ts).
 */
import type { Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB, ReservationStatus, TransactionSource } from "../db/schema.ts";
import type { PlainDebitRow } from "../db/write-path.ts";
import type { JsonText } from "../json.ts";
import { type EntryInput, entryRow, type PostedEntry } from "./core.ts";
import type { Spendable } from "./grants.ts";

/** A debit of an account, as its request or its hold defines it. */
export interface Debit {
  projectId: string;
  /** The account: its internal id or externalId. */
  accountRef: string;
  /** What the debit takes, micro-credits (a confirm's actual amount; may be 0 then). */
  amountMicros: number;
  description: string;
  /** The entry's metadata, or its text as written earlier (a confirm's, stored with its hold). */
  metadata: Record<string, unknown> | JsonText;
  source: Extract<TransactionSource, "deduct" | "manual" | "reservation">;
  /** A confirm: the pending hold it settles (its amount in micro-credits). */
  hold?: { id: string; amountMicros: number } | undefined;
}

/** A plain debit done (plain-debit.ts, plain-member.ts): the account named and the stored entry. */
export interface PlainDebited {
  account: { id: string; external_id: string };
  row: PostedEntry;
}

/** A debit that settles no hold: a deduction or a manual debit. */
export type UnheldDebit = Debit & { hold?: undefined };

/**
 * What the debit takes of `available` (micro-credits): its amount beyond the hold it settles,
 * which may be 0 or less (a confirm under its hold). A debit needs this much available
 * (docs/api.md#balance-adjustments-and-transactions, docs/api.md#reservations).
 */
export function neededMicros(debit: Debit): number {
  return debit.amountMicros - (debit.hold?.amountMicros ?? 0);
}

/**
 * The ledger entry the debit posts on the account `accountId` (or, for SQLite's plain move, the
 * account's reference) at `nowMs`; `spendable` as `EntryInput` says.
 */
export function debitEntry(
  debit: Debit,
  accountId: string,
  nowMs: number,
  spendable?: Spendable,
): EntryInput {
  return {
    projectId: debit.projectId,
    accountId,
    type: "debit",
    amountMicros: debit.amountMicros,
    description: debit.description,
    metadata: debit.metadata,
    source: debit.source,
    reservationId: debit.hold?.id ?? null,
    nowMs,
    spendable,
  };
}

/** Ends a pending hold; the `status = 'pending'` guard makes a second ending a no-op. */
const endHoldStatement = prepared<
  {
    id: string;
    status: ReservationStatus;
    nowMs: number;
    actualMicros: number | null;
    transactionId: string | null;
  },
  unknown
>((db, arg) =>
  db
    .updateTable("reservations")
    .set({
      status: arg("status"),
      settled_at_ms: arg("nowMs"),
      actual_micros: arg("actualMicros"),
      transaction_id: arg("transactionId"),
    })
    .where("id", "=", arg("id"))
    .where("status", "=", "pending"),
);

/**
 * Ends the pending hold `holdId` at `nowMs` (docs/api.md#reservations): confirmed by the entry
 * `transactionId` of `actualMicros`, or cancelled (both null). A hold ends once: a hold no
 * longer pending is left as it is.
 */
export async function endHold(
  trx: Transaction<DB>,
  holdId: string,
  nowMs: number,
  ending:
    | { status: "confirmed"; actualMicros: number; transactionId: string }
    | { status: "cancelled"; actualMicros: null; transactionId: null },
): Promise<void> {
  await trx.executeQuery(endHoldStatement(trx, { id: holdId, nowMs, ...ending }));
}

/** Settles the hold `debit` confirms, if any, by its posted entry `transactionId`. */
export async function settleHold(
  trx: Transaction<DB>,
  debit: Debit,
  transactionId: string,
  nowMs: number,
): Promise<void> {
  if (debit.hold === undefined) return;
  const ending = { status: "confirmed" as const, actualMicros: debit.amountMicros, transactionId };
  await endHold(trx, debit.hold.id, nowMs, ending);
}

/**
 * What PostgreSQL's plain debit `debit` did, from the row its function answered (`applied`):
 * the account the debit named and the stored entry of id `txnId`, as `postEntry` answers it.
 * `booked`: for an account in a tree (plain-member-pg.ts), the pool whose ledger has the entry,
 * on the account's behalf unless it is the pool, and the grant it drew from.
 */
export function pgDebited(
  debit: Debit,
  txnId: string,
  nowMs: number,
  done: PlainDebitRow,
  booked?: { poolId: string; grantSeq: number | null },
): PlainDebited {
  const accountId = booked?.poolId ?? done.account_id;
  const onBehalfOf = accountId === done.account_id ? null : done.account_id;
  const row = entryRow({ ...debitEntry(debit, accountId, nowMs), onBehalfOf }, txnId, {
    balanceAfterMicros: Number(done.balance_after_micros),
    createdAtMs: Number(done.created_at_ms),
    grantSeq: booked?.grantSeq ?? null,
  });
  return {
    account: { id: done.account_id, external_id: done.external_id },
    row: { ...row, seq: Number(done.seq), grantId: null },
  };
}
