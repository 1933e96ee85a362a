/**
 * Identifiers: a short type prefix and a monotonic ULID (time-sortable, 128 bits, of which 80
 * random), e.g. `acc_01JD…`. The ULID comes from the `ulid` library.
 */
import { monotonicFactory } from "ulid";

const ulid = monotonicFactory();

export type IdPrefix =
  | "prj"
  | "key"
  | "acc"
  | "txn"
  | "res"
  | "plan"
  | "ap"
  | "use"
  | "grt"
  | "wh"
  | "evt"
  | "whd";

/** A new id with the given prefix: `${prefix}_${ULID}`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

/** The form of an internal account id: `acc_` and a ULID (26 of Crockford's base-32 digits). */
export const INTERNAL_ACCOUNT_ID = /^acc_[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * True when `value` has the form of an internal account id, in any letter case (ULIDs read
 * case-insensitively). Such a string is refused as an externalId, so that one string never
 * names two accounts (docs/api.md, "Accounts").
 */
export function looksLikeAccountId(value: string): boolean {
  return INTERNAL_ACCOUNT_ID.test(value.toUpperCase().replace(/^ACC_/, "acc_"));
}
