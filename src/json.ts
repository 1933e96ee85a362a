/**
 * Exact JSON text ↔ values, for request and response bodies and for the JSON columns
 * (metadata, stored responses). See docs/api.md, "Amounts and money".
 *
 * - Parsing keeps every number literal exact: a literal that a double holds with every digit
 *   becomes a `number`; any other stays a `LosslessNumber` holding its text. Keys such as
 *   `__proto__` become plain own properties. Duplicate keys are refused.
 * - Writing turns `ExactDecimal`s (credits, USD) and `LosslessNumber`s into their literals, so
 *   no amount ever passes through a double on its way out.
 */
import {
  type DuplicateKeyInfo,
  isSafeNumber,
  LosslessNumber,
  type ParseOptions,
  parse,
  stringify,
} from "lossless-json";
import { ExactDecimal } from "./money.ts";

/** A number read from JSON text: a double when exact, else the literal's text. */
export type JsonNumber = number | LosslessNumber;

/** True for a `LosslessNumber` (a number literal a double cannot hold exactly). */
export function isLosslessNumber(value: unknown): value is LosslessNumber {
  return value instanceof LosslessNumber;
}

function parseNumber(text: string): JsonNumber {
  return isSafeNumber(text) ? Number(text) : new LosslessNumber(text);
}

/**
 * An object of JSON text that holds `key` twice, with different values (the same key with equal
 * values is read as one). `position` is where the second one starts in the text (the index of
 * its opening quote); `objectPath` finds the object it is in.
 */
export class DuplicateKeyError extends SyntaxError {
  constructor(
    readonly key: string,
    readonly position: number,
  ) {
    super(`Duplicate key ${JSON.stringify(key)} at position ${position}`);
    this.name = "DuplicateKeyError";
  }
}

const parseOptions: ParseOptions = {
  parseNumber,
  onDuplicateKey: ({ key, position }: DuplicateKeyInfo) => {
    // lossless-json gives the position one past the key's opening quote.
    throw new DuplicateKeyError(key, position - 1);
  },
};

/**
 * Parses JSON text, keeping number literals exact.
 * @throws DuplicateKeyError on an object with a duplicate key; SyntaxError on text that is not
 *   JSON
 */
export function parseJsonText(text: string): unknown {
  return parse(text, null, parseOptions);
}

/**
 * The path of the object whose key starts at index `at` of JSON `text` (valid JSON up to there,
 * as the parser read it): the key of each enclosing object and the index of each enclosing
 * array, from the top (empty for the top-level object). Used only to word an error, so it scans
 * the text again rather than make the parser keep track.
 */
export function objectPath(text: string, at: number): string[] {
  // Per open container: its current key (object) or element index (array).
  const path: (string | number)[] = [];
  let expectKey = false;
  let i = 0;
  while (i < at) {
    const ch = text[i];
    if (ch === '"') {
      const end = stringEnd(text, i);
      if (expectKey) path[path.length - 1] = String(JSON.parse(text.slice(i, end + 1)));
      expectKey = false;
      i = end + 1;
      continue;
    }
    if (ch === "{") {
      path.push("");
      expectKey = true;
    } else if (ch === "[") {
      path.push(0);
    } else if (ch === "}" || ch === "]") {
      path.pop();
    } else if (ch === ",") {
      const top = path[path.length - 1];
      if (typeof top === "number") path[path.length - 1] = top + 1;
      else expectKey = true;
    }
    i++;
  }
  // The innermost object's current key is the one before `at`: not part of the path.
  return path.slice(0, -1).map(String);
}

/** The index of the closing quote of the JSON string whose opening quote is at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
  return i;
}

const exactNumbers = [
  {
    test: (value: unknown) => value instanceof ExactDecimal,
    stringify: (value: unknown) => (value as ExactDecimal).literal,
  },
];

/**
 * JSON text of a value: `ExactDecimal`s and `LosslessNumber`s as their exact literals,
 * everything else as `JSON.stringify` would write it.
 */
export function stringifyJson(value: unknown): string {
  return stringify(value, undefined, undefined, exactNumbers) ?? "null";
}

/**
 * JSON text this service wrote earlier, to be stored again exactly as it is (a confirm's entry
 * metadata, written with its hold: docs/design.md#plain-writes).
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** Parses a stored JSON object column (null stays null). */
export function parseJsonColumn(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  // The most common column by far (an entry without metadata), read without the parser.
  if (text === "{}") return {};
  return parseJsonText(text) as Record<string, unknown>;
}

/**
 * Parses JSON text that this service wrote and will write again unchanged (a stored response
 * being replayed): every number stays a `LosslessNumber` holding its literal, so writing the
 * value back with `stringifyJson` gives the same text, digit for digit.
 */
export function parseJsonVerbatim(text: string): unknown {
  return parse(text);
}

/**
 * The same text as `stringifyJson`, written by a direct walk instead of lossless-json's
 * replacer machinery, about ten times faster: for the exports' hot loop (docs/design.md#exports),
 * which writes a million items at a time. Handles what the API's objects hold (null, booleans,
 * finite numbers, strings, `ExactDecimal`, `LosslessNumber`, arrays, plain objects); anything
 * else (an object with its own `toJSON`, a non-finite number) goes to `stringifyJson`.
 * test/exports.test.ts checks that both write the same text.
 */
export function stringifyJsonFast(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      return Number.isFinite(value) ? String(value) : stringifyJson(value);
    case "object":
      break;
    default:
      return stringifyJson(value);
  }
  if (value instanceof ExactDecimal) return value.literal;
  if (value instanceof LosslessNumber) return value.value;
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? "null" : stringifyJsonFast(item))).join(",")}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return stringifyJson(value);
  let text = "";
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    text += `${text === "" ? "" : ","}${JSON.stringify(key)}:${stringifyJsonFast(item)}`;
  }
  return `{${text}}`;
}
