/**
 * What the model expects of one answer, and how an answer is read into the same shape, so that
 * the two compare with one `toEqual` and a divergence prints both side by side.
 */
import { at, credits, microsAt, numberAt, stringAt } from "./exact.ts";

/** An expected answer: the status, the error code, and the fields that matter by path. */
export interface Expected {
  status: number;
  code?: string;
  /** Amounts by path in the body (`balance`, `error.details.available`): micro-credits or null. */
  money: Record<string, number | null>;
  /** Other fields by path (strings; null when the field must be null). */
  fields: Record<string, string | null>;
  /** The `Retry-After` header of a spend-limit refusal, in seconds (single requests only). */
  retryAfter?: number;
}

/** A refusal by the model: the request changes nothing and answers `expected`. */
export class Refused extends Error {
  readonly expected: Expected;
  constructor(
    status: number,
    code: string,
    money: Record<string, number | null> = {},
    fields: Record<string, string | null> = {},
    retryAfter?: number,
  ) {
    super(`${status} ${code}`);
    this.expected = {
      status,
      code,
      money,
      fields,
      ...(retryAfter === undefined ? {} : { retryAfter }),
    };
  }
}

/** A 200 expecting `money` and `fields`. */
export function ok(
  money: Record<string, number | null>,
  fields: Record<string, string | null> = {},
): Expected {
  return { status: 200, money, fields };
}

/** What an answer shows of the paths `expected` names, in the shape of `Expected`, amounts as text. */
export function observed(
  expected: Expected,
  status: number,
  body: unknown,
  retryAfter: string | null | undefined,
) {
  const code = stringAt(body, "error.code");
  const money = Object.fromEntries(
    Object.keys(expected.money).map((path) => {
      const micros = microsAt(body, path);
      return [path, micros === undefined ? "(absent)" : micros === null ? null : credits(micros)];
    }),
  );
  const fields = Object.fromEntries(
    Object.keys(expected.fields).map((path) => {
      const value = at(body, path);
      return [path, value === undefined ? "(absent)" : value === null ? null : String(value)];
    }),
  );
  return {
    status,
    ...(code === undefined ? {} : { code }),
    money,
    fields,
    ...(expected.retryAfter === undefined || retryAfter === undefined
      ? {}
      : { retryAfter: retryAfter === null ? null : Number(retryAfter) }),
  };
}

/** `expected` with its amounts as text, to compare with `observed`. */
export function shown(expected: Expected) {
  const money = Object.fromEntries(
    Object.entries(expected.money).map(([path, micros]) => [
      path,
      micros === null ? null : credits(micros),
    ]),
  );
  return { ...expected, money };
}

/** The failed operation's index that an aborted atomic batch's result names. */
export function failedIndexOf(body: unknown): number | undefined {
  return numberAt(body, "error.details.failedIndex");
}
