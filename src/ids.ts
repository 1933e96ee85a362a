/**
 * Identifiers: a short type prefix and a monotonic ULID (time-sortable, 128 bits, of which 80
 * random), e.g. `acc_01JD…`. The ULID comes from the `ulid` library, fed with random bytes from
 * the platform's cryptographic generator drawn a pool at a time (the library's own source asks
 * the generator once per character, 16 calls per id).
 */
import { monotonicFactory } from "ulid";

/** Random bytes drawn from the generator at once. */
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let next = POOL_BYTES;

/** A random fraction in [0, 1) from one cryptographically random byte, as the library's own. */
function randomFraction(): number {
  if (next === POOL_BYTES) {
    globalThis.crypto.getRandomValues(pool);
    next = 0;
  }
  const byte = pool[next] ?? 0;
  next++;
  return byte / 256;
}

const ulid = monotonicFactory(randomFraction);

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
  | "whd"
  | "trf"
  | "pur"
  | "atu";

/**
 * Prefix of every generated API key (a secret, not an id, made in src/db/api-keys.ts), so that
 * a leaked key is recognisable, and the logger can mask anything shaped like one.
 */
export const API_KEY_PREFIX = "ldg_";

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
