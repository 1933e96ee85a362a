/**
 * The one error vocabulary of the API (docs/api.md#errors): every error is
 * `{"success": false, "error": {"code", "message", "details"?}}` with the status of its code.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type ZodError, z } from "zod";
import { isLosslessNumber } from "./json.ts";

/** Every error code with its HTTP status (docs/api.md#errors). */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  INVALID_SIGNATURE: 400,
  UNAUTHORIZED: 401,
  INSUFFICIENT_CREDITS: 402,
  SPEND_LIMIT_EXCEEDED: 402,
  ACCOUNT_NOT_FOUND: 404,
  RESERVATION_NOT_FOUND: 404,
  PLAN_NOT_FOUND: 404,
  ACCOUNT_PLAN_NOT_FOUND: 404,
  TRANSACTION_NOT_FOUND: 404,
  MODEL_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  DELIVERY_NOT_FOUND: 404,
  NOT_FOUND: 404,
  DUPLICATE_EXTERNAL_ID: 409,
  RESERVATION_NOT_PENDING: 409,
  PLAN_INACTIVE: 409,
  ACCOUNT_PLAN_NOT_ACTIVE: 409,
  BALANCE_LIMIT_EXCEEDED: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  BATCH_ABORTED: 409,
  WEBHOOK_LIMIT_REACHED: 409,
  DELIVERY_NOT_FAILED: 409,
  NOT_REVERSIBLE: 409,
  REVERSAL_EXCEEDS_ORIGINAL: 409,
  REVERSAL_EXCEEDS_REMAINING: 409,
  ACCOUNT_BUSY: 409,
  FUNDED_BY_PARENT: 409,
  DUPLICATE_STRIPE_CUSTOMER: 409,
  STRIPE_NOT_CONFIGURED: 409,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  HEADERS_TOO_LARGE: 431,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The 401 message of a missing, unknown or revoked key: it names both headers a key may use. */
export const UNAUTHORIZED_MESSAGE =
  "Missing or invalid API key: send it as X-API-Key: <key> or Authorization: Bearer <key>";

/** The body of every error response. */
export interface ErrorBody {
  success: false;
  error: { code: ErrorCode; message: string; details?: unknown };
}

/** An error the API answers with its code's status; thrown by services and middleware. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  /** Headers the answer carries besides the JSON body (`Retry-After` of a spend limit). */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: unknown,
    headers?: Readonly<Record<string, string>>,
  ) {
    // An ApiError is an answer, not a fault: skip capturing a stack, which costs more than
    // the rest of a rejected request.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): ContentfulStatusCode {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    const error: ErrorBody["error"] = { code: this.code, message: this.message };
    if (this.details !== undefined) error.details = this.details;
    return { success: false, error };
  }
}

/** One field problem: `path` is the dotted path inside the request part ("body.amount"). */
export interface FieldIssue {
  path: string;
  message: string;
}

/** The message of a field a route requires and the request does not hold. */
export const MISSING_FIELD = "required field missing";
/** The message of a field or parameter the route does not define. */
export const UNKNOWN_FIELD = "unknown field: this request does not define it";

/** What a value of each type zod may expect must be, in the words of a field message. */
const TYPE_WORDS: Partial<Record<string, string>> = {
  number: "must be a number",
  int: "must be an integer",
  string: "must be a string",
  boolean: "must be true or false",
  object: "must be an object",
  array: "must be an array",
};

/** A value of `z.enum` or `z.literal` as a field message quotes it. */
function quoted(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/**
 * The message of a zod issue whose schema gives none, for a person reading a 400's `details`
 * (docs/api.md#strict-input): a missing field is `MISSING_FIELD`, a value of the wrong type
 * "must be a number" / "must be an integer" / "must be a string" / …, an option outside an enum
 * "must be one of …". Other issues keep zod's own message (undefined here).
 */
export function fieldMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === "invalid_value") {
    const [only, ...more] = issue.values;
    if (more.length === 0) return `must be ${quoted(only)}`;
    return `must be one of ${issue.values.map(quoted).join(", ")}`;
  }
  if (issue.code !== "invalid_type") return undefined;
  const { input, expected } = issue;
  // JSON has no `undefined`: the field, or the query parameter, is absent.
  if (input === undefined) return MISSING_FIELD;
  if (expected === "number" || expected === "int") {
    // A literal a double cannot hold exactly (src/json.ts) where a plain number is expected.
    if (isLosslessNumber(input)) return "has too many digits, or is too large, for this field";
    // A query's text that reads as a number too large for a double ("1e400").
    if (input === Number.POSITIVE_INFINITY || input === Number.NEGATIVE_INFINITY) {
      return "must be a finite number";
    }
  }
  return TYPE_WORDS[expected];
}

// zod's error map is process-wide: every schema that gives no message of its own (the routes'
// bodies and queries, the batch envelope) is worded by `fieldMessage`, whichever validator ran
// it. zod asks the map before its own English defaults, and after a schema's own message.
z.config({ customError: fieldMessage });

/**
 * Turns a zod error on request part `target` ("body", "query", …) into a 400 ApiError;
 * `missing(path)` tells an absent required field, reported as missing.
 */
export function validationError(
  target: string,
  error: ZodError | undefined,
  unknown: string[][] = [],
  missing: (path: readonly PropertyKey[]) => boolean = () => false,
): ApiError {
  const all: FieldIssue[] = (error?.issues ?? []).map((issue) => ({
    path: [target, ...issue.path.map(String)].join("."),
    message: missing(issue.path) ? MISSING_FIELD : issue.message,
  }));
  for (const path of unknown)
    all.push({ path: [target, ...path].join("."), message: UNKNOWN_FIELD });
  // A missing field may fail more than one check; it is named once.
  const issues = all.filter(
    (issue, i) => all.findIndex((o) => o.path === issue.path && o.message === issue.message) === i,
  );
  const first = issues[0];
  const message = first ? `Invalid ${first.path}: ${first.message}` : "Invalid request";
  return new ApiError("VALIDATION_ERROR", message, issues);
}

/**
 * The app's `onError`, in three tiers: our ApiError as is; Hono's HTTPException mapped to the
 * nearest code; anything else logged and answered with a generic 500 (no stack, SQL or key).
 */
export function errorResponse(err: unknown, c: Context, log: (err: unknown) => void): Response {
  if (err instanceof ApiError) return c.json(err.toBody(), err.status, err.headers);
  if (err instanceof HTTPException) {
    const mapped = fromHttpException(err);
    return c.json(mapped.toBody(), mapped.status);
  }
  log(err);
  const internal = new ApiError("INTERNAL_ERROR", "An unexpected error occurred");
  return c.json(internal.toBody(), internal.status);
}

function fromHttpException(err: HTTPException): ApiError {
  switch (err.status) {
    case 401:
      return new ApiError("UNAUTHORIZED", UNAUTHORIZED_MESSAGE);
    case 404:
      return new ApiError("NOT_FOUND", "Not found");
    case 413:
      return new ApiError("PAYLOAD_TOO_LARGE", "Request body is too large");
    case 415:
      return new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
    default:
      if (err.status >= 400 && err.status < 500) {
        return new ApiError("VALIDATION_ERROR", "Malformed request");
      }
      return new ApiError("INTERNAL_ERROR", "An unexpected error occurred");
  }
}
