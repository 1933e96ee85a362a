/**
 * Exact money arithmetic (contract §1).
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
/** Largest single amount of a request: 1e9 credits, in micro-credits (contract §1). */
export const MAX_AMOUNT_MICROS = 1_000_000_000 * MICROS_PER_UNIT;
/** Largest balance: 9e9 credits, in micro-credits (below 2^53, contract §1). */
export const MAX_BALANCE_MICROS = 9_000_000_000 * MICROS_PER_UNIT;

const PICO_PER_USD = 10n ** 12n;

/**
 * Converts a decimal JSON number to integer micro-units, exactly.
 * Works on the number's shortest decimal representation (`String(x)`), so 0.3 → 300000 and
 * 0.30000000000000004 (17 decimals) → null.
 * @returns the micro-units, or null when `x` is not finite, has more than 6 decimals, or the
 *   result is not a safe integer.
 */
export function toMicros(x: number): number | null {
  if (!Number.isFinite(x)) return null;
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(x));
  if (!match) return null;
  const [, sign, intPart = "0", fracPart = "", expPart = "0"] = match;
  // digits × 10^(exponent) where digits is an integer string.
  const digits = BigInt(intPart + fracPart);
  const exponent = Number(expPart) - fracPart.length + 6;
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
  return Number(micros);
}

/** True when `x` is a finite number with at most 6 decimals (see `toMicros`). */
export function hasAtMostSixDecimals(x: number): boolean {
  return toMicros(x) !== null;
}

/**
 * Integer micro-units → JSON number. Division of two exact integers is correctly rounded, so
 * the result is the double nearest the decimal value (300000 → 0.3, the same as the literal).
 */
export function fromMicros(micros: number): number {
  return micros / MICROS_PER_UNIT;
}

/** Token prices of a model, in micro-USD per million tokens. */
export interface PriceMicros {
  inputMicrosPerM: number;
  outputMicrosPerM: number;
  /** null: cached input tokens are charged at the input price. */
  cachedMicrosPerM: number | null;
}

/** Token counts of one call. `cachedTokens` is a part of `inputTokens` (contract §9). */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

/**
 * The cost of a call in pico-USD (contract §9):
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
  const negative = pico < 0n;
  const abs = negative ? -pico : pico;
  const whole = abs / PICO_PER_USD;
  const frac = (abs % PICO_PER_USD).toString().padStart(12, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

/** pico-USD → JSON number in USD (the double nearest the exact decimal). */
export function picoUsdToNumber(pico: bigint): number {
  return Number(picoUsdToString(pico));
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
