/**
 * The time a balance move stamps on its account (`updated_at_ms`, which is also its entry's
 * `created_at_ms`; docs/design.md#the-write-path-on-postgresql). On PostgreSQL the units of
 * several processes take turns on an account in lock order, not clock order, so the time never
 * goes back from the account's last move: its entries stay in time order along their
 * balanceAfter chain (the transaction list's newest first). SQLite's queue runs units in clock
 * order already, so there it is the unit's clock.
 */
import type { ExpressionBuilder } from "kysely";
import type { Engine } from "./engine.ts";
import type { DB } from "./schema.ts";

/** The new `updated_at_ms` (epoch ms) of an account a statement on `accounts` moves at `nowMs`. */
export function moveTime(eb: ExpressionBuilder<DB, "accounts">, nowMs: number, engine: Engine) {
  return engine === "postgres"
    ? eb.fn<number>("greatest", [eb.ref("updated_at_ms"), eb.val(nowMs)])
    : eb.val(nowMs);
}
