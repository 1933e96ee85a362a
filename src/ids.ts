/**
 * Identifiers: a short type prefix and a monotonic ULID (time-sortable, 128 bits, of which 80
 * random), e.g. `acc_01JD…`. The ULID comes from the `ulid` library.
 */
import { monotonicFactory } from "ulid";

const ulid = monotonicFactory();

export type IdPrefix = "prj" | "key" | "acc" | "txn" | "res" | "plan" | "ap" | "use";

/** A new id with the given prefix: `${prefix}_${ULID}`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}
