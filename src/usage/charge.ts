/**
 * Charging usage in credits (docs/api.md#charging-usage-in-credits): a usage's credit cost is its
 * exact USD cost × the project's `creditsPerUsd`, rounded up to the micro-credit, and
 * `POST /v1/usage/record` with `deduct: true` records the usage and debits that cost in one unit
 * of work. The debit is the deduction's own (`moveCredits`, src/ledger/service.ts): the same
 * checks, spending order of grants, expiries and low-balance alert; nothing here restates them.
 * This is the charge's general path; its plain path, the deduction's plain debit, is
 * plain-charge.ts.
 * A confirm with `usage` prices it here too (src/reservations/routes.ts).
 */
import type { Kysely, Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { poolIdOf } from "../accounts/placement.ts";
import { prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { type MoveInput, moveCredits } from "../ledger/service.ts";
import { type ModelPriceRow, priceOf } from "../models/service.ts";
import {
  costPicoUsd,
  creditCostMicros,
  MAX_AMOUNT_MICROS,
  MICROS_PER_UNIT,
  type TokenCounts,
} from "../money.ts";
import { noCreditPrice } from "../projects/service.ts";
import { insertUsage, type NewUsageRecord, type RecordUsageInput, usageRow } from "./service.ts";

/**
 * The model with the project's credit price beside it, in one statement (on the hot path of
 * every charge): no row when the model is not in the catalog.
 */
const modelWithPrice = prepared<{ projectId: string; modelId: string }, PriceRow>((db, arg) =>
  db
    .selectFrom("models")
    .select(["model_id", "input_micros_per_m", "output_micros_per_m", "cached_micros_per_m"])
    .select((eb) =>
      eb
        .selectFrom("projects")
        .select("projects.credits_per_usd_micros")
        .where("projects.id", "=", arg("projectId"))
        .as("credits_per_usd_micros"),
    )
    .where("models.model_id", "=", arg("modelId")),
);

/** A usage priced in credits: its model (prices as of now) and its credit cost. */
export interface CreditPricedUsage {
  model: ModelPriceRow;
  /** The credit cost in micro-credits, rounded up; at most 1e9 credits. */
  creditsMicros: number;
}

/** The model and the project's credit price as read together, or undefined (no such model). */
export type PriceRow = ModelPriceRow & { credits_per_usd_micros: number | null };

/**
 * Reads model `modelId` with project `projectId`'s credit price beside it: one prepared
 * statement, in the unit `db` (a transaction) or by itself.
 */
export async function readPrice(
  db: Kysely<DB>,
  projectId: string,
  modelId: string,
): Promise<PriceRow | undefined> {
  return (await db.executeQuery(modelWithPrice(db, { projectId, modelId }))).rows[0];
}

/**
 * What `tokens` cost in credits at `row`'s prices: the exact USD cost × the credit price,
 * rounded up to the micro-credit (money.ts `creditCostMicros`).
 * @throws ApiError VALIDATION_ERROR (no credit price, or a cost above 1e9 credits, the largest
 *   single amount)
 */
export function creditsOf(row: PriceRow, tokens: TokenCounts): CreditPricedUsage {
  const { credits_per_usd_micros: price, ...model } = row;
  if (price === null) throw noCreditPrice();
  const credits = creditCostMicros(costPicoUsd(tokens, priceOf(model)), price);
  if (credits > BigInt(MAX_AMOUNT_MICROS)) {
    const limit = MAX_AMOUNT_MICROS / MICROS_PER_UNIT;
    throw new ApiError(
      "VALIDATION_ERROR",
      `The usage's credit cost exceeds the largest single amount (${limit} credits)`,
      [{ path: "body", message: `credit cost above ${limit} credits` }],
    );
  }
  return { model, creditsMicros: Number(credits) };
}

/**
 * Prices `tokens` of model `modelId` in credits at the project's credit price, both read in one
 * statement.
 * @throws ApiError MODEL_NOT_FOUND, and those of `creditsOf`
 */
export async function priceInCredits(
  trx: Transaction<DB>,
  projectId: string,
  modelId: string,
  tokens: TokenCounts,
): Promise<CreditPricedUsage> {
  const row = await readPrice(trx, projectId, modelId);
  if (!row) throw new ApiError("MODEL_NOT_FOUND", `Model ${modelId} not found`);
  return creditsOf(row, tokens);
}

/**
 * The deduction that charges usage record `usageRecordId` of `model` `creditsMicros`: the one
 * definition both paths of a charge book (its description and metadata name the record and
 * the model).
 */
export function chargeMove(
  accountRef: string,
  model: ModelPriceRow,
  creditsMicros: number,
  usageRecordId: string,
): MoveInput & { type: "debit"; source: "deduct" } {
  return {
    accountRef,
    type: "debit",
    amountMicros: creditsMicros,
    description: `Usage of ${model.model_id}`,
    metadata: { usageRecordId, modelId: model.model_id },
    source: "deduct",
  };
}

/**
 * The checks of `deduct: true` that need no database: customer usage, an account, and no
 * `transactionId` (the charge makes its own).
 * @throws ApiError VALIDATION_ERROR naming what is missing or in the way
 */
export function checkChargeable(input: RecordUsageInput): string {
  const refuse = (path: string, message: string): never => {
    throw new ApiError("VALIDATION_ERROR", `deduct: true ${message}`, [
      { path: `body.${path}`, message },
    ]);
  };
  if (input.context !== "customer") refuse("context", "needs context customer");
  if (input.transactionId !== undefined) {
    refuse("transactionId", "makes its own debit: leave transactionId out");
  }
  return input.accountRef ?? refuse("accountId", "needs the accountId of the account to charge");
}

/** A charged usage record, its debit (null for a cost of 0) and the balance afterwards. */
export interface ChargedUsage {
  row: NewUsageRecord;
  creditsChargedMicros: number;
  transactionId: string | null;
  balanceMicros: number;
}

/**
 * Records `input` and debits its credit cost in the caller's unit of work
 * (docs/api.md#charging-usage-in-credits). The debit is a deduction (`moveCredits`, source
 * `deduct`, metadata naming the record and the model): when it is refused (402) the unit fails
 * and nothing is recorded. A cost of 0 books no debit and still records the usage.
 * @throws ApiError VALIDATION_ERROR (see `checkChargeable`, `priceInCredits`), MODEL_NOT_FOUND,
 *   ACCOUNT_NOT_FOUND, INSUFFICIENT_CREDITS, and whatever a deduction throws
 */
export async function chargeUsage(
  trx: Transaction<DB>,
  projectId: string,
  input: RecordUsageInput,
  nowMs: number,
): Promise<ChargedUsage> {
  const accountRef = checkChargeable(input);
  const { model, creditsMicros } = await priceInCredits(trx, projectId, input.modelId, input);
  const id = newId("use");
  let accountId: string;
  let transactionId: string | null = null;
  let balanceMicros: number;
  if (creditsMicros > 0) {
    const move = chargeMove(accountRef, model, creditsMicros, id);
    const { account, row } = await moveCredits(trx, projectId, move, nowMs);
    accountId = account.id;
    transactionId = row.id;
    balanceMicros = row.balance_after_micros;
  } else {
    const account = await findAccount(trx, projectId, accountRef, { lock: false });
    accountId = account.id;
    // A member's balance is its pool's (docs/api.md#pools-and-members).
    const payer = await findAccount(trx, projectId, await poolIdOf(trx, account), { lock: false });
    balanceMicros = payer.balance_micros;
  }
  const charge = { id, transactionId, creditsChargedMicros: creditsMicros };
  const row = await insertUsage(trx, usageRow(projectId, input, model, accountId, nowMs, charge));
  return { row, creditsChargedMicros: creditsMicros, transactionId, balanceMicros };
}
