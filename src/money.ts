/**
 * Exact money arithmetic (docs/api.md#amounts-and-money).
 *
 * - Credits travel as JSON numbers with at most 6 decimals and live inside as integer
 *   micro-credits (1 credit = 1,000,000 micro-credits).
 * - Model prices are USD per million tokens with at most 6 decimals, kept as integer
 *   micro-USD per million tokens.
 * - A cost is tokens × micro-USD-per-million = pico-USD (1 USD = 10^12 pico-USD), computed in
 *   BigInt so that no product or sum is ever rounded.
 */

/** Micro-units in one unit (credits or USD). */
export const MICROS_PER_UNIT = 1_000_000;
/** Largest single amount of a request: 1e9 credits, in micro-credits (docs/api.md#amounts-and-money). */
export const MAX_AMOUNT_MICROS = 1_000_000_000 * MICROS_PER_UNIT;
/** Largest balance: 9e9 credits, in micro-credits (below 2^53, docs/api.md#amounts-and-money). */
export const MAX_BALANCE_MICROS = 9_000_000_000 * MICROS_PER_UNIT;

/**
 * An exact decimal value on its way into a JSON response: an amount of credits or USD written
 * as the literal `literal` (for example `8600000000.000001`), never through a double.
 *
 * The response writer (`src/http/json.ts`) writes `literal` as a JSON number as it is. `toJSON`
 * exists for the type system (Hono types a response field holding an `ExactDecimal` as a
 * number) and for any plain `JSON.stringify`, which can only write the nearest double.
 */
export class ExactDecimal {
  /** A JSON number literal: optional minus, digits, optional fraction without trailing zeros. */
  readonly literal: string;

  constructor(literal: string) {
    this.literal = literal;
  }

  /** The nearest double; plain `JSON.stringify` writes this. */
  toJSON(): number {
    return Number(this.literal);
  }

  toString(): string {
    return this.literal;
  }
}

/**
 * The exact decimal literal of `units / 10^scale` for an integer `units`, without trailing
 * zeros (`1_500_000n, 6` → "1.5", `-300000n, 6` → "-0.3").
 */
export function scaledToLiteral(units: bigint, scale: number): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const divisor = 10n ** BigInt(scale);
  const whole = abs / divisor;
  const frac = (abs % divisor).toString().padStart(scale, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

const JSON_NUMBER = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Converts the text of a JSON number literal to integer micro-units, exactly, without ever
 * going through a double: "0.3" → 300000, "1e-6" → 1, "0.30000000000000001" → null.
 * Trailing zeros do not count as decimals ("1.0000000" → 1000000): they do not change the value.
 * @returns the micro-units, or null when the text is not a JSON number, has more than 6
 *   decimals, or the result is not a safe integer.
 */
export function literalToMicros(text: string): number | null {
  const match = JSON_NUMBER.exec(text);
  if (!match) return null;
  const [, sign, intPart = "0", fracPart = "", expPart = "0"] = match;
  // A huge exponent can only produce a value far past any limit (or far below a micro-unit).
  if (expPart.length > 6) return null;
  const digits = BigInt(intPart + fracPart);
  const exponent = Number(expPart) - fracPart.length + 6;
  if (exponent > 40) return digits === 0n ? 0 : null;
  let micros: bigint;
  if (exponent >= 0) {
    micros = digits * 10n ** BigInt(exponent);
  } else {
    const divisor = 10n ** BigInt(-exponent);
    if (digits % divisor !== 0n) return null;
    micros = digits / divisor;
  }
  if (sign === "-") micros = -micros;
  if (micros > BigInt(Number.MAX_SAFE_INTEGER) || micros < -BigInt(Number.MAX_SAFE_INTEGER)) {
    return null;
  }
  // Number(-0n) is 0: "-0" is zero micro-units.
  return Number(micros);
}

/**
 * Converts a number to integer micro-units, exactly, through its shortest decimal
 * representation (`String(x)`): 0.3 → 300000, 0.30000000000000004 → null. Meant for numbers
 * that came from a decimal literal with that same shortest form (the catalog file, config);
 * request amounts are converted from their JSON text with `literalToMicros`.
 * @returns the micro-units, or null when `x` is not finite, has more than 6 decimals, or the
 *   result is not a safe integer.
 */
export function toMicros(x: number): number | null {
  if (!Number.isFinite(x)) return null;
  return literalToMicros(String(x));
}

/** Integer micro-units → the exact decimal value (300000 → 0.3), for a JSON response. */
export function fromMicros(micros: number): ExactDecimal {
  return new ExactDecimal(microsToLiteral(micros));
}

/**
 * The exact decimal literal of integer micro-units (`8600000000000001` → "8600000000.000001"),
 * as `scaledToLiteral` writes it. For a safe integer, in plain double arithmetic, which is exact
 * there: `%` of integers is exact, and `(micros − frac) / 1e6` is a whole number below 2^53.
 */
export function microsToLiteral(micros: number): string {
  if (!Number.isSafeInteger(micros)) return scaledToLiteral(BigInt(micros), 6);
  const abs = Math.abs(micros);
  const frac = abs % MICROS_PER_UNIT;
  const whole = (abs - frac) / MICROS_PER_UNIT;
  const sign = micros < 0 ? "-" : "";
  if (frac === 0) return `${sign}${whole}`;
  const digits = String(frac).padStart(6, "0").replace(/0+$/, "");
  return `${sign}${whole}.${digits}`;
}

/** Integer micro-units of any size (a sum may pass 2^53) → the exact decimal value. */
export function bigMicrosToDecimal(micros: bigint): ExactDecimal {
  return new ExactDecimal(scaledToLiteral(micros, 6));
}

/** Token prices of a model, in micro-USD per million tokens. */
export interface PriceMicros {
  inputMicrosPerM: number;
  outputMicrosPerM: number;
  /** null: cached input tokens are charged at the input price. */
  cachedMicrosPerM: number | null;
}

/** Token counts of one call. `cachedTokens` is a part of `inputTokens` (docs/api.md#usage-and-models). */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

/**
 * The cost of a call in pico-USD (docs/api.md#usage-and-models):
 * (input − cached) × inputPrice + cached × (cachedPrice ?? inputPrice) + output × outputPrice,
 * with prices in micro-USD per million tokens, so each product is already in pico-USD.
 */
export function costPicoUsd(tokens: TokenCounts, price: PriceMicros): bigint {
  const uncached = BigInt(tokens.inputTokens - tokens.cachedTokens);
  const cachedPrice = price.cachedMicrosPerM ?? price.inputMicrosPerM;
  return (
    uncached * BigInt(price.inputMicrosPerM) +
    BigInt(tokens.cachedTokens) * BigInt(cachedPrice) +
    BigInt(tokens.outputTokens) * BigInt(price.outputMicrosPerM)
  );
}

/** pico-USD → exact decimal string in USD, without trailing zeros ("0.0000125"). */
export function picoUsdToString(pico: bigint): string {
  return scaledToLiteral(pico, 12);
}

/** pico-USD → the exact decimal value in USD, for a JSON response (at most 12 decimals). */
export function picoUsdToDecimal(pico: bigint): ExactDecimal {
  return new ExactDecimal(picoUsdToString(pico));
}

/**
 * Micro-units of an amount that request validation already accepted (≤ 6 decimals).
 * @throws Error when the amount was not validated (a bug, not a client error)
 */
export function validatedMicros(amount: number): number {
  const value = toMicros(amount);
  if (value === null) throw new Error(`amount ${amount} was not validated`);
  return value;
}

/** Pico-USD in one USD. */
const PICO_PER_USD = 1_000_000_000_000n;

/**
 * The credit cost of a USD cost (docs/api.md#charging-usage-in-credits): `costPico` pico-USD ×
 * `creditsPerUsdMicros` micro-credits per USD, in micro-credits, rounded up (a charge never
 * rounds down). pico-USD × micro-credits/USD = 10^-12 micro-credits, so the exact value is
 * `costPico × creditsPerUsdMicros / 10^12`, computed in BigInt.
 * @returns micro-credits (may exceed any single amount: callers bound it)
 */
export function creditCostMicros(costPico: bigint, creditsPerUsdMicros: number): bigint {
  const scaled = costPico * BigInt(creditsPerUsdMicros);
  return (scaled + PICO_PER_USD - 1n) / PICO_PER_USD;
}
