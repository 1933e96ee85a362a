/**
 * Exact arithmetic on the client's amounts (docs/api.md#amounts-in-the-client; contract section
 * 15): an amount arrives as a `number` when a double holds its literal exactly, else as a
 * `LosslessAmount` (a lossless-json `LosslessNumber`), so `a < b` or `a + b` neither compiles
 * nor would be exact. These helpers work on the decimal literal itself, in `bigint`, never
 * through a double:
 *
 * - `toMicros(amount)`: credits → integer micro-credits (`bigint`, 1 credit = 1,000,000);
 * - `fromMicros(micros)`: back, in the form the client hands amounts over;
 * - `compareAmounts(a, b)`, `addAmounts(...amounts)`, `subtractAmounts(a, b)`: exact at any
 *   number of decimals (USD costs have more than credits' six).
 *
 * A `number` stands for its shortest decimal literal (`String(n)`), which is the literal the
 * service wrote whenever the client parsed it; a string must be a JSON number literal. No
 * Node-only API: runs wherever the client runs.
 */
import { exactNumber } from "./exact-json.ts";
import type { Amount } from "./openapi.ts";

/** What the helpers take: an amount of the client, or a JSON number literal as text. */
export type AmountInput = Amount | string;

/** An exact decimal: `units × 10^-scale`, `scale` ≥ 0. */
interface Decimal {
  units: bigint;
  scale: number;
}

const LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** Exponents beyond this are refused rather than expanded into huge integers. */
const MAX_EXPONENT = 400;
/** Decimals of a micro-credit. */
const MICRO_DECIMALS = 6;

function literalOf(amount: AmountInput): string {
  if (typeof amount === "string") return amount.trim();
  if (typeof amount === "number") {
    if (!Number.isFinite(amount)) throw new RangeError(`not a finite amount: ${amount}`);
    return String(amount);
  }
  return amount.value;
}

/** @throws RangeError when `amount` is not a finite decimal number */
function decimalOf(amount: AmountInput): Decimal {
  const literal = literalOf(amount);
  const match = LITERAL.exec(literal);
  if (!match) throw new RangeError(`not a decimal amount: ${JSON.stringify(literal)}`);
  const [, sign = "", whole = "", fraction = "", exponentText = "0"] = match;
  const exponent = Number(exponentText);
  if (Math.abs(exponent) > MAX_EXPONENT) throw new RangeError(`amount out of range: ${literal}`);
  const digits = BigInt(`${whole}${fraction}`) * (sign === "-" ? -1n : 1n);
  const shift = exponent - fraction.length;
  return shift >= 0
    ? { units: digits * 10n ** BigInt(shift), scale: 0 }
    : { units: digits, scale: -shift };
}

function rescale(d: Decimal, scale: number): bigint {
  return d.units * 10n ** BigInt(scale - d.scale);
}

/** The decimal as a JSON number literal without trailing zeros (`-0.5`, `12`, `0.000001`). */
function toLiteral(d: Decimal): string {
  if (d.units === 0n) return "0";
  const negative = d.units < 0n;
  let digits = (negative ? -d.units : d.units).toString();
  let scale = d.scale;
  while (scale > 0 && digits.endsWith("0")) {
    digits = digits.slice(0, -1);
    scale--;
  }
  if (scale > 0) {
    digits = digits.padStart(scale + 1, "0");
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  return negative && digits !== "0" ? `-${digits}` : digits;
}

/** The decimal in the client's form: a `number` when exact, else a `LosslessNumber`. */
function toAmount(d: Decimal): Amount {
  return exactNumber(toLiteral(d));
}

/**
 * Credits as integer micro-credits: `toMicros(25.5)` → `25500000n`,
 * `toMicros(new LosslessNumber("8600000000.000001"))` → `8600000000000001n`.
 * @throws RangeError when `amount` is not a decimal number, or has a non-zero digit past the
 *   sixth decimal (it is not a whole number of micro-credits; nothing is rounded)
 */
export function toMicros(amount: AmountInput): bigint {
  const d = decimalOf(amount);
  if (d.scale <= MICRO_DECIMALS) return rescale(d, MICRO_DECIMALS);
  const divisor = 10n ** BigInt(d.scale - MICRO_DECIMALS);
  if (d.units % divisor !== 0n) {
    throw new RangeError(`${literalOf(amount)} is not a whole number of micro-credits`);
  }
  return d.units / divisor;
}

/**
 * Integer micro-credits as an amount of the client: `fromMicros(25500000n)` → `25.5`,
 * `fromMicros(8600000000000001n)` → `LosslessNumber("8600000000.000001")` (a double would
 * round it). `String(result)` is the exact literal either way, and the result can be sent back
 * to the service as it is.
 */
export function fromMicros(micros: bigint): Amount {
  return toAmount({ units: micros, scale: MICRO_DECIMALS });
}

/**
 * Compares two amounts exactly: -1 when `a < b`, 0 when equal (`1.50` and `1.5` are), 1 when
 * `a > b`. @throws RangeError when either is not a decimal number
 */
export function compareAmounts(a: AmountInput, b: AmountInput): -1 | 0 | 1 {
  const x = decimalOf(a);
  const y = decimalOf(b);
  const scale = Math.max(x.scale, y.scale);
  const diff = rescale(x, scale) - rescale(y, scale);
  return diff < 0n ? -1 : diff > 0n ? 1 : 0;
}

/**
 * The exact sum of `amounts` (0 for none), in the client's form: `addAmounts(0.1, 0.2)` → `0.3`.
 * @throws RangeError when one is not a decimal number
 */
export function addAmounts(...amounts: AmountInput[]): Amount {
  const ds = amounts.map(decimalOf);
  const scale = Math.max(0, ...ds.map((d) => d.scale));
  const units = ds.reduce((sum, d) => sum + rescale(d, scale), 0n);
  return toAmount({ units, scale });
}

/**
 * `a − b` exactly, in the client's form: `subtractAmounts(25.5, 6.96)` → `18.54`.
 * @throws RangeError when either is not a decimal number
 */
export function subtractAmounts(a: AmountInput, b: AmountInput): Amount {
  const x = decimalOf(a);
  const y = decimalOf(b);
  const scale = Math.max(x.scale, y.scale);
  return toAmount({ units: rescale(x, scale) - rescale(y, scale), scale });
}
