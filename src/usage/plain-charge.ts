/**
 * The plain charge (docs/design.md#plain-writes, docs/api.md#charging-usage-in-credits): a
 * `deduct: true` usage record whose debit is plain is recorded with the deduction's own plain
 * debit (ledger/plain-debit.ts), so the debit rule stays defined once:
 *
 * - SQLite: `sqlitePlainDebit` (the plain move, the entry, the grant), then the usage record's
 *   INSERT, all in the unit of the queue's one writer. The charge is priced at the prices this
 *   process last read for the model (price-guess.ts), and the plain move checks them (a
 *   `MoveGuard`, src/ledger/plain-move.ts): it moves nothing unless the stored prices are
 *   those. The prices are read in the unit (one prepared statement) when there is no such
 *   guess, or when the guess proved stale, and the plain debit is tried with them.
 * - PostgreSQL: one statement, one round trip: it checks the prices the charge was priced at
 *   (the last this process read, price-guess.ts), calls `ledger_plain_debit` and inserts the
 *   usage record from its answer only when it applied the debit (a data-modifying CTE): the
 *   record and its debit commit together or not at all. When the guess proved stale the prices
 *   are read and the statement runs once more. An account with spend limits takes the general
 *   path here (the statement calls the unlimited plain debit).
 *
 * So the guess saves a read and never decides which path a charge takes.
 *
 * Whenever the charge is not plain (a cost of 0, a debit that is not plain, a missing price or
 * model, a body `deduct: true` refuses) nothing is changed and the write path runs the general
 * unit (`chargeUsage`, charge.ts), which answers the errors.
 */
import { type Kysely, sql } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import type { PlainWrite } from "../db/write-path.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { UnheldDebit } from "../ledger/debit.ts";
import {
  type PgArgs,
  type PgDebitRow,
  pgDebitArgs,
  pgDebited,
  sqlitePlainDebit,
} from "../ledger/plain-debit.ts";
import { moveGuard } from "../ledger/plain-move.ts";
import { debitOf } from "../ledger/service.ts";
import {
  type ChargedUsage,
  type CreditPricedUsage,
  chargeMove,
  checkChargeable,
  creditsOf,
  type PriceRow,
  readPrice,
} from "./charge.ts";
import { forgetPrice, guessedPrice, keepPrice } from "./price-guess.ts";
import { insertUsage, type NewUsageRecord, type RecordUsageInput, usageRow } from "./service.ts";

/** A charge found plain so far: its price, its debit and its usage record's id. */
interface PlainPricing extends CreditPricedUsage {
  debit: UnheldDebit;
  usageRecordId: string;
  /** The credit price it was priced at, micro-credits per USD. */
  price: number;
}

/** `check()`'s value, or null when it refuses with an ApiError (the general path answers it). */
function refusedAsNull<T>(check: () => T): T | null {
  try {
    return check();
  } catch (err) {
    if (err instanceof ApiError) return null;
    throw err;
  }
}

/**
 * The price and the debit of a `deduct: true` record `input`, or null when the general path
 * must take it: a body it refuses, an unknown model, no credit price, a cost it refuses or a
 * cost of 0 (which books no debit). Nothing is changed.
 */
async function plainPricing(
  projectId: string,
  input: RecordUsageInput,
  price: () => Promise<PriceRow | undefined>,
): Promise<PlainPricing | null> {
  const accountRef = refusedAsNull(() => checkChargeable(input));
  if (accountRef === null) return null;
  const row = await price();
  if (row === undefined || row.credits_per_usd_micros === null) return null;
  const priced = refusedAsNull(() => creditsOf(row, input));
  if (priced === null) return null;
  if (priced.creditsMicros === 0) return null;
  const usageRecordId = newId("use");
  const move = chargeMove(accountRef, priced.model, priced.creditsMicros, usageRecordId);
  return {
    ...priced,
    debit: debitOf(projectId, move),
    usageRecordId,
    price: row.credits_per_usd_micros,
  };
}

/** The usage record of a plain charge whose debit `transactionId` took from `accountId`. */
function chargedRow(
  projectId: string,
  input: RecordUsageInput,
  p: PlainPricing,
  accountId: string,
  transactionId: string,
  nowMs: number,
): NewUsageRecord {
  const charge = { id: p.usageRecordId, transactionId, creditsChargedMicros: p.creditsMicros };
  return usageRow(projectId, input, p.model, accountId, nowMs, charge);
}

/**
 * The prices last read for `modelId` in project `projectId` (price-guess.ts), or read now in `db`
 * (kept as the next guess when the project has a credit price).
 */
async function guessOrRead(
  db: Kysely<DB>,
  projectId: string,
  modelId: string,
  guess: PriceRow | undefined,
): Promise<PriceRow | undefined> {
  if (guess !== undefined) return guess;
  const row = await readPrice(db, projectId, modelId);
  if (row !== undefined && row.credits_per_usd_micros !== null) keepPrice(projectId, modelId, row);
  return row;
}

/** What SQLite's price guard compares: the project, its credit price and the model's prices. */
type PriceArgs = {
  g_project: string;
  g_price: number | null;
  g_model: string;
  g_input: number;
  g_output: number;
  g_cached: number | null;
};

/**
 * SQLite's check of a guess, for the plain move (src/ledger/plain-move.ts `MoveGuard`): the
 * project's credit price and the model's prices are still those of the guess (`IS`: a null
 * cached price equals a null one).
 */
const pricesStill = moveGuard<PriceArgs>((eb, arg) =>
  eb.exists(
    eb
      .selectFrom(["projects as gp", "models as gm"])
      .select(sql.lit(1).as("one"))
      .where("gp.id", "=", arg("g_project"))
      .where("gp.credits_per_usd_micros", "=", arg("g_price"))
      .where("gm.model_id", "=", arg("g_model"))
      .where("gm.input_micros_per_m", "=", arg("g_input"))
      .where("gm.output_micros_per_m", "=", arg("g_output"))
      .where("gm.cached_micros_per_m", "is", arg("g_cached")),
  ),
);

/** The guard's values for the guess `guess` of project `projectId`. */
function pricesOf(projectId: string, guess: PriceRow) {
  const args: PriceArgs = {
    g_project: projectId,
    g_price: guess.credits_per_usd_micros,
    g_model: guess.model_id,
    g_input: guess.input_micros_per_m,
    g_output: guess.output_micros_per_m,
    g_cached: guess.cached_micros_per_m,
  };
  return { guard: pricesStill, args };
}

/**
 * The usage record's columns but its account, which the statement takes from the debit; its
 * metadata as `usage_metadata` (`metadata` is the entry's); and the credit price it was priced
 * at, which the statement checks with the record's model prices.
 */
type UsageArgs = Omit<NewUsageRecord, "account_id" | "metadata"> & {
  usage_metadata: string | null;
  credits_per_usd_micros: number;
};

/**
 * PostgreSQL's plain charge, one statement: `ok` holds the project only while the model's
 * prices and the project's credit price are those the charge was priced at (price-guess.ts);
 * `ledger_plain_debit` (sql/postgres/functions/ledger_plain_debit.sql) runs once per row of `ok` (its
 * project argument is `ok`'s, so never without one); and the usage record is inserted with the
 * debited account only when the debit was applied. No row: the prices differ, nothing changed.
 * The casts type the parameters as their columns.
 */
const pgPlainCharge = prepared<PgArgs & UsageArgs, PgDebitRow>((db, arg) => ({
  compile: () =>
    sql<PgDebitRow>`WITH ok AS (SELECT p.id FROM projects p JOIN models m ON m.model_id = ${arg("model_id")}::text WHERE p.id = ${arg("projectId")}::text AND p.credits_per_usd_micros = ${arg("credits_per_usd_micros")}::bigint AND m.input_micros_per_m = ${arg("input_micros_per_m")}::bigint AND m.output_micros_per_m = ${arg("output_micros_per_m")}::bigint AND m.cached_micros_per_m IS NOT DISTINCT FROM ${arg("cached_micros_per_m")}::bigint), d AS MATERIALIZED (SELECT f.* FROM ok CROSS JOIN LATERAL ledger_plain_debit(ok.id, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("description")}, ${arg("metadata")}, ${arg("source")}, ${arg("holdId")}, ${arg("holdMicros")}) f), u AS (INSERT INTO usage_records (id, project_id, account_id, context, model_id, usage_type, input_tokens, output_tokens, cached_tokens, transaction_id, input_micros_per_m, output_micros_per_m, cached_micros_per_m, cost_micro_usd, cost_pico_rem, metadata, created_at_ms, credits_charged_micros) SELECT ${arg("id")}::text, ${arg("project_id")}::text, d.account_id, ${arg("context")}::text, ${arg("model_id")}::text, ${arg("usage_type")}::text, ${arg("input_tokens")}::bigint, ${arg("output_tokens")}::bigint, ${arg("cached_tokens")}::bigint, ${arg("transaction_id")}::text, ${arg("input_micros_per_m")}::bigint, ${arg("output_micros_per_m")}::bigint, ${arg("cached_micros_per_m")}::bigint, ${arg("cost_micro_usd")}::bigint, ${arg("cost_pico_rem")}::bigint, ${arg("usage_metadata")}::text, ${arg("created_at_ms")}::bigint, ${arg("credits_charged_micros")}::bigint FROM d WHERE d.outcome = 'applied') SELECT * FROM d`.compile(
      db,
    ),
}));

/**
 * PostgreSQL's plain charge (see `pgPlainCharge`) at the prices last read for the model, read
 * now when there are none: what it charged, or null with nothing changed (the prices had
 * changed: forgotten, so that the general path and the next charge read them anew).
 */
async function pgCharge(
  db: Kysely<DB>,
  projectId: string,
  input: RecordUsageInput,
  nowMs: number,
): Promise<ChargedUsage | null> {
  const guess = guessedPrice(projectId, input.modelId);
  const first = await pgChargeAt(db, projectId, input, nowMs, guess);
  if (first !== "stale") return first;
  // The prices changed since the guess: read them, and charge at them.
  forgetPrice(projectId, input.modelId);
  const second = await pgChargeAt(db, projectId, input, nowMs, undefined);
  return second === "stale" ? null : second;
}

/**
 * One statement of `pgCharge` at the prices `guess` (undefined: read now): what it charged,
 * null (not plain, nothing changed), or "stale" (the stored prices are not those).
 */
async function pgChargeAt(
  db: Kysely<DB>,
  projectId: string,
  input: RecordUsageInput,
  nowMs: number,
  guess: PriceRow | undefined,
): Promise<ChargedUsage | null | "stale"> {
  const p = await plainPricing(projectId, input, () =>
    guessOrRead(db, projectId, input.modelId, guess),
  );
  if (p === null) return null;
  const txnId = newId("txn");
  // The account is the debit's: the row is built with its reference, the statement inserts the
  // id `ledger_plain_debit` found.
  const { account_id: _ref, ...usage } = chargedRow(projectId, input, p, "", txnId, nowMs);
  const { metadata: usage_metadata, ...columns } = usage;
  const args = {
    ...pgDebitArgs(p.debit, nowMs, txnId),
    ...columns,
    usage_metadata,
    credits_per_usd_micros: p.price,
  };
  const done = (await db.executeQuery(pgPlainCharge(db, args))).rows[0];
  if (done === undefined) return guess === undefined ? null : "stale";
  if (done.outcome !== "applied") return null;
  const debited = pgDebited(p.debit, txnId, nowMs, done);
  const row = { ...usage, account_id: debited.account.id };
  return charged(row, p, txnId, debited.row.balance_after_micros);
}

/**
 * The plain path of `POST /v1/usage/record` with `deduct: true` for project `projectId`'s
 * record `input` (see the module comment): what it charged, or null with nothing changed.
 */
export function plainCharge(projectId: string, input: RecordUsageInput): PlainWrite<ChargedUsage> {
  return {
    sqlite: async (trx, nowMs, seen) => {
      const attempt = async (guess: PriceRow | undefined) => {
        const p = await plainPricing(projectId, input, () =>
          guessOrRead(trx, projectId, input.modelId, guess),
        );
        if (p === null) return null;
        // A guess is checked by the move; prices read in this unit are the stored ones.
        const guarded = guess === undefined ? undefined : pricesOf(projectId, guess);
        const done = await sqlitePlainDebit(trx, p.debit, nowMs, seen, guarded);
        return done === null ? null : { p, done };
      };
      const guess = guessedPrice(projectId, input.modelId);
      let made = await attempt(guess);
      if (made === null && guess !== undefined) {
        // The prices may have changed: read them in this unit, and try at them.
        forgetPrice(projectId, input.modelId);
        made = await attempt(undefined);
      }
      if (made === null) return null;
      const { p, done } = made;
      const txn = done.row;
      const row = chargedRow(projectId, input, p, done.account.id, txn.id, nowMs);
      await insertUsage(trx, row);
      return charged(row, p, txn.id, txn.balance_after_micros);
    },
    postgres: (db, nowMs) => pgCharge(db, projectId, input, nowMs),
  };
}

/** What a plain charge answers, as `chargeUsage` does. */
function charged(
  row: NewUsageRecord,
  p: PlainPricing,
  transactionId: string,
  balanceMicros: number,
): ChargedUsage {
  return { row, creditsChargedMicros: p.creditsMicros, transactionId, balanceMicros };
}
