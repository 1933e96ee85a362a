/**
 * Exact money on the wire for the ledger model test: amounts are integer micro-credits in the
 * model, written into requests as exact decimal literals and read back from answers as the
 * literals the service wrote (every JSON number of an answer is kept as its text), so no amount
 * ever passes through a binary float on either side.
 */
import { isLosslessNumber, LosslessNumber, parse, stringify } from "lossless-json";

/** The decimal literal of `micros` micro-credits (or micro-USD): `1500000` → "1.5". */
export function credits(micros: number | bigint): string {
  const units = BigInt(micros);
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const frac = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${abs / 1_000_000n}${frac ? `.${frac}` : ""}`;
}

/** `micros` as a JSON number literal for a request body. */
export function amount(micros: number | bigint): LosslessNumber {
  return new LosslessNumber(credits(micros));
}

/**
 * The integer micro-units of a decimal literal with at most 6 decimals ("0.125" → 125000).
 * @throws Error on any other text (an exponent, more decimals), so a wire value the model cannot
 *   read exactly fails the test rather than being rounded
 */
export function microsOf(literal: string): number {
  const match = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(literal);
  if (!match) throw new Error(`not an exact amount literal: ${literal}`);
  const [, sign = "", whole = "0", frac = ""] = match;
  const value = BigInt(whole) * 1_000_000n + BigInt(frac.padEnd(6, "0"));
  const micros = Number(sign === "-" ? -value : value);
  if (!Number.isSafeInteger(micros)) throw new Error(`amount out of range: ${literal}`);
  return micros;
}

/** Parses JSON text keeping every number as its literal (`LosslessNumber`). */
export function parseLossless(text: string): unknown {
  return parse(text, null, (literal) => new LosslessNumber(literal));
}

/** JSON text of a value holding `LosslessNumber`s, each written as its literal. */
export function stringifyLossless(value: unknown): string {
  return stringify(value) ?? "null";
}

/** The value at `path` (dot-separated keys) of a parsed body, or undefined. */
export function at(value: unknown, path: string): unknown {
  let here = value;
  for (const key of path.split(".")) {
    if (here === null || typeof here !== "object") return undefined;
    here = (here as Record<string, unknown>)[key];
  }
  return here;
}

/** The micro-credits at `path` of a parsed body; undefined when absent, null when null. */
export function microsAt(value: unknown, path: string): number | null | undefined {
  const found = at(value, path);
  if (found === undefined || found === null) return found;
  if (!isLosslessNumber(found)) throw new Error(`${path} is not a number: ${String(found)}`);
  return microsOf(found.value);
}

/** The string at `path` of a parsed body, or undefined when it is not a string. */
export function stringAt(value: unknown, path: string): string | undefined {
  const found = at(value, path);
  return typeof found === "string" ? found : undefined;
}

/** The plain number at `path` (an index, a status, a priority), or undefined. */
export function numberAt(value: unknown, path: string): number | undefined {
  const found = at(value, path);
  return isLosslessNumber(found) ? Number(found.value) : undefined;
}
