/**
 * Exact JSON for the typed client (docs/api.md#amounts-in-the-client): a number literal that a
 * double holds exactly is read as a `number`, any other as a `LosslessNumber` holding the
 * literal, so no amount is ever rounded on its way in; `LosslessNumber`s are written as their
 * literals, so none is rounded on its way out. Runs on every JavaScript runtime (no Node API).
 */
import { isSafeNumber, LosslessNumber, parse, stringify } from "lossless-json";

/**
 * A JSON number literal as the client hands amounts over: a `number` when a double holds the
 * literal exactly, else a `LosslessNumber` holding it.
 */
export function exactNumber(literal: string): number | LosslessNumber {
  return isSafeNumber(literal) ? Number(literal) : new LosslessNumber(literal);
}

/**
 * Parses JSON text, keeping every number literal exact.
 * @throws SyntaxError on text that is not JSON (a duplicate key included)
 */
export function parseExact(text: string): unknown {
  return parse(text, null, exactNumber);
}

/**
 * JSON text of `value`: `LosslessNumber`s as their literals, everything else as
 * `JSON.stringify` writes it.
 */
export function stringifyExact(value: unknown): string {
  return stringify(value) ?? "null";
}
