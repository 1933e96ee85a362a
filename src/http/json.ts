/**
 * Exact JSON in and out: the one place that reads request bodies and writes response bodies
 * (docs/api.md, "Amounts and money" and "Errors").
 *
 * In: the body bytes must be UTF-8 (invalid bytes are a 400, never silently replaced), nested at
 * most `MAX_BODY_DEPTH` levels (checked by one linear scan of the text, before anything
 * recursive runs), and well-formed JSON without duplicate keys, parsed by `parseJsonText`
 * (number literals kept exact, so `0.30000000000000001` can never turn into 0.3 on the way to
 * an amount). Every string, object key included, must be well-formed Unicode without U+0000.
 *
 * Out: `c.json` writes with `stringifyJson`: amounts (`ExactDecimal`) and numbers in metadata
 * (`LosslessNumber`) as their exact literals.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { StatusCode } from "hono/utils/http-status";
import { ApiError, type FieldIssue } from "../errors.ts";
import {
  DuplicateKeyError,
  isLosslessNumber,
  objectPath,
  parseJsonText,
  stringifyJson,
} from "../json.ts";

/** Deepest nesting of arrays and objects anywhere in a request body. */
export const MAX_BODY_DEPTH = 32;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A lone (unpaired) UTF-16 surrogate. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored as given, or null when it can (well-formed, no U+0000). */
export function stringProblem(value: string): string | null {
  if (value.includes("\u0000")) return "must not contain U+0000";
  if (LONE_SURROGATE.test(value)) return "must be well-formed Unicode (a lone surrogate)";
  return null;
}

function invalid(path: string, message: string): ApiError {
  return new ApiError("VALIDATION_ERROR", `Invalid ${path}: ${message}`, [{ path, message }]);
}

/**
 * The deepest nesting of arrays and objects in JSON text, by one scan that skips strings.
 * Stops counting (and returns) as soon as `limit` is passed.
 */
export function jsonDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x7b || ch === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (ch === 0x7d || ch === 0x5d) {
      depth--;
    }
  }
  return deepest;
}

/** Checks every string and key of a parsed body (depth already bounded). */
function checkStrings(value: unknown, path: string, issues: FieldIssue[]): void {
  if (typeof value === "string") {
    const problem = stringProblem(value);
    if (problem) issues.push({ path, message: problem });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => {
      checkStrings(item, `${path}.${i}`, issues);
    });
  } else if (value !== null && typeof value === "object" && !isLosslessNumber(value)) {
    for (const [key, item] of Object.entries(value)) {
      const problem = stringProblem(key);
      if (problem) issues.push({ path: `${path}.${key}`, message: `key ${problem}` });
      checkStrings(item, `${path}.${key}`, issues);
    }
  }
}

/**
 * The 400 of a body whose object holds a key twice: the message names the key, and the object
 * it is in unless that is the body itself (`Malformed JSON: duplicate key "amount"`,
 * `Malformed JSON: duplicate key "a" in body.metadata`); `details` names the key's path.
 */
function duplicateKey(text: string, err: DuplicateKeyError): ApiError {
  const object = ["body", ...objectPath(text, err.position)];
  const where = object.length > 1 ? ` in ${object.join(".")}` : "";
  const message = `duplicate key ${JSON.stringify(err.key)}`;
  return new ApiError("VALIDATION_ERROR", `Malformed JSON: ${message}${where}`, [
    { path: [...object, err.key].join("."), message },
  ]);
}

/**
 * Parses a request body.
 * @param bytes the raw body
 * @returns the JSON value: objects, arrays, strings, booleans, null, and `JsonNumber`s
 * @throws ApiError VALIDATION_ERROR for bytes that are not UTF-8, text that is not JSON (a
 *   duplicate key included, named with its path), nesting past `MAX_BODY_DEPTH`, or a string
 *   that cannot be stored as given; `details` names the path
 */
export function parseRequestJson(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalid("body", "not valid UTF-8");
  }
  if (jsonDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    throw invalid("body", `nested more than ${MAX_BODY_DEPTH} levels`);
  }
  let value: unknown;
  try {
    value = parseJsonText(text);
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw duplicateKey(text, err);
    throw new ApiError("VALIDATION_ERROR", "Malformed JSON in request body", [
      { path: "body", message: "malformed JSON" },
    ]);
  }
  const issues: FieldIssue[] = [];
  checkStrings(value, "body", issues);
  const first = issues[0];
  if (first) {
    throw new ApiError("VALIDATION_ERROR", `Invalid ${first.path}: ${first.message}`, issues);
  }
  return value;
}

/**
 * Middleware that makes `c.json` write exact JSON (`stringifyJson`) for every response of the
 * app, errors included. Hono's own `c.json` calls `JSON.stringify`, which can only write a
 * double; the replacement keeps its signature, so handlers stay typed against their routes.
 */
export function exactJsonResponses(): MiddlewareHandler {
  return async (c, next) => {
    c.json = exactJson(c);
    await next();
  };
}

/** The `init` form of `c.newResponse`'s second argument (status and headers). */
type ResponseInitOf = Exclude<Parameters<Context["newResponse"]>[1], undefined>;

function exactJson(c: Context): Context["json"] {
  const respond = (
    object: unknown,
    arg?: StatusCode | ResponseInitOf,
    headers?: Record<string, string | string[]>,
  ) => {
    const text = stringifyJson(object);
    // A Content-Type given by the caller (in `arg` or `headers`) still wins over this default.
    if (typeof arg === "object") {
      c.header("Content-Type", "application/json");
      return c.newResponse(text, arg);
    }
    // Given as the one header of a plain object, Hono hands it to the adapter as it is, without
    // building a `Headers` (docs/design.md#http-on-node).
    const type = { "Content-Type": "application/json" };
    return c.newResponse(text, arg, headers ? { ...type, ...headers } : type);
  };
  // The one cast of the response path: Hono declares `json` as an overloaded generic, which a
  // plain function cannot implement; `respond` takes the same arguments as Hono's own `json`
  // and builds the same Response, with exact numbers.
  return respond as Context["json"];
}
