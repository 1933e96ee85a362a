/**
 * How the console writes the API's numbers for a person (contract section 16): digits grouped
 * by thousands, worked on the exact decimal text the service wrote, never through a double.
 */
import type { LosslessNumber } from "lossless-json";
import { compareAmounts, subtractAmounts } from "../src/client/amounts.ts";

/** A JSON number as the service wrote it (api.ts's `Num`; no DOM here, so Node tests load it). */
type Num = LosslessNumber;

/** A plain decimal literal: sign, integer part, fraction. */
const DECIMAL = /^(-?)(\d+)(\.\d+)?$/;

/**
 * `literal` with its integer part grouped by thousands: `17600000628.965079` →
 * `17,600,000,628.965079`, `-1234` → `-1,234`. The fraction is left as written. Text that is not
 * a plain decimal literal (an exponent, a word) comes back unchanged.
 */
export function groupDigits(literal: string): string {
  const match = DECIMAL.exec(literal);
  if (!match) return literal;
  const [, sign = "", whole = "", fraction = ""] = match;
  return `${sign}${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",")}${fraction}`;
}

/** A number of the API (or a count of the console) as grouped text. */
export function grouped(value: Num | number | string): string {
  return groupDigits(String(value));
}

/** A usage summary or group: the credits charged, and those given back when the API has them. */
export interface CreditsUsed {
  creditsCharged?: Num | null;
  creditsReversed?: Num | null;
}

/**
 * The credits a usage summary or group stands for: `creditsCharged` less `creditsReversed`
 * (0 when the API does not send it), exact, as a decimal literal; `undefined` when the API sent
 * no `creditsCharged`.
 */
export function creditsUsed(summary: CreditsUsed | undefined): string | undefined {
  const charged = summary?.creditsCharged;
  if (charged === undefined || charged === null) return undefined;
  const reversed = summary?.creditsReversed;
  // Without a reversal the API's own literal is shown, digit for digit.
  if (reversed === undefined || reversed === null) return String(charged);
  // Equal amounts are 0 here: `subtractAmounts` fails on a zero difference with decimals
  // (`0.3 − 0.3`).
  if (compareAmounts(String(charged), String(reversed)) === 0) return "0";
  return String(subtractAmounts(String(charged), String(reversed)));
}
