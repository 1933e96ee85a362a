/**
 * zod schemas shared by every resource (with OpenAPI metadata), and the input limits
 * (docs/api.md, "Errors"): ids and names ≤ 255 characters, descriptions ≤ 1,000, metadata ≤ 50
 * keys, ≤ 5 levels deep and ≤ 8 KiB as JSON, amounts with ≤ 6 decimals and ≤ 1e9 credits, every
 * string well-formed Unicode without U+0000.
 */
import { z } from "@hono/zod-openapi";
import { boundMs, parseDateParam } from "../dates.ts";
import { ERROR_STATUS, type ErrorBody, type ErrorCode } from "../errors.ts";
import { isLosslessNumber, type JsonNumber, stringifyJson } from "../json.ts";
import { literalToMicros, MAX_AMOUNT_MICROS, MICROS_PER_UNIT } from "../money.ts";
import { exampleErrors } from "./examples.ts";
import { stringProblem } from "./json.ts";

export const MAX_ID_LENGTH = 255;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const MAX_METADATA_KEYS = 50;
export const MAX_METADATA_DEPTH = 5;
export const MAX_METADATA_BYTES = 8 * 1024;
const MAX_AMOUNT_CREDITS = MAX_AMOUNT_MICROS / MICROS_PER_UNIT;

/** A string stored and read back exactly: well-formed Unicode, no U+0000. */
function storable(schema: z.ZodString) {
  return schema.superRefine((value, ctx) => {
    const problem = stringProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
}

/** An id or name: 1–255 characters. */
export const idString = storable(z.string().min(1).max(MAX_ID_LENGTH));

/** A name or other optional text of at most 255 characters (may be empty). */
export const shortString = storable(z.string().max(MAX_ID_LENGTH));

/** A description: at most 1,000 characters. */
export const descriptionString = storable(z.string().max(MAX_DESCRIPTION_LENGTH));

/** Nesting depth of a JSON value (the body's depth is already bounded, so recursion is safe). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== "object" || isLosslessNumber(value)) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depthOf(child)), 0);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    value !== null && typeof value === "object" && !Array.isArray(value) && !isLosslessNumber(value)
  );
}

/**
 * Caller-chosen metadata: a JSON object within the limits. The object is passed on as parsed,
 * never copied key by key, so keys such as `__proto__` stay plain data and round-trip.
 */
export const metadataSchema = z
  .custom<Record<string, unknown>>(isPlainObject, { message: "must be an object" })
  .superRefine((value, ctx) => {
    if (Object.keys(value).length > MAX_METADATA_KEYS) {
      ctx.addIssue({ code: "custom", message: `at most ${MAX_METADATA_KEYS} keys` });
    }
    if (depthOf(value) > MAX_METADATA_DEPTH) {
      ctx.addIssue({ code: "custom", message: `nested at most ${MAX_METADATA_DEPTH} levels` });
    } else if (Buffer.byteLength(stringifyJson(value)) > MAX_METADATA_BYTES) {
      ctx.addIssue({ code: "custom", message: `at most ${MAX_METADATA_BYTES} bytes as JSON` });
    }
  })
  .openapi({ type: "object", additionalProperties: true, example: { orderId: "ord_123" } });

/** The text of a JSON number as the request wrote it (for a double: its shortest form). */
function numberText(value: JsonNumber): string {
  return typeof value === "number" ? String(value) : value.value;
}

/**
 * A JSON number of a request body (`number`, or `LosslessNumber` when a double cannot hold it;
 * see src/http/json.ts). Documented as a number.
 */
const jsonNumber = z.custom<JsonNumber>(
  (value) => typeof value === "number" || isLosslessNumber(value),
  { message: "must be a number" },
);

/**
 * An amount of credits in a request, converted from its JSON text to integer micro-credits
 * (never through a double): at most 6 decimals, at most 1e9 credits, positive unless
 * `allowZero`. The parsed value is the amount in micro-credits.
 */
export function creditAmount(options: { allowZero?: boolean } = {}) {
  return jsonNumber
    .transform((value, ctx) => {
      const text = numberText(value);
      const micros = literalToMicros(text);
      const fail = (message: string) => {
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      };
      if (micros === null) {
        return Math.abs(Number(text)) > MAX_AMOUNT_CREDITS
          ? fail(`must be at most ${MAX_AMOUNT_CREDITS} credits`)
          : fail("must have at most 6 decimal places");
      }
      if (micros > MAX_AMOUNT_MICROS) return fail(`must be at most ${MAX_AMOUNT_CREDITS} credits`);
      if (micros < 0 || (micros === 0 && !options.allowZero)) {
        return fail(options.allowZero ? "must not be negative" : "must be positive");
      }
      return micros;
    })
    .openapi({
      type: "number",
      example: 100,
      description: "Credits, at most 6 decimals (read as micro-credits)",
    });
}

/** A token count: a whole number from 0 to 1e9. */
export const tokenCount = z.number().int().min(0).max(1_000_000_000);

/**
 * The error body of section 2, unnamed: for a place that holds it inline (a batch operation's
 * result), where the API reference's renderer refuses a reference to the named `Error`.
 */
export const inlineErrorBodySchema = z.object({
  success: z.literal(false),
  error: z.object({
    code: z.string().openapi({ example: "INSUFFICIENT_CREDITS" }),
    message: z.string().openapi({ example: "Insufficient available credits" }),
    details: z.unknown().optional(),
  }),
});

export const errorBodySchema = inlineErrorBodySchema.openapi("Error", {
  example: {
    success: false,
    error: {
      code: "INSUFFICIENT_CREDITS",
      message: "Insufficient available credits",
      details: { available: 2.5, requested: 9.6 },
    },
  },
});

const STATUS_TEXT: Record<number, string> = {
  400: "Invalid input",
  401: "Missing or invalid API key",
  402: "Not enough available credits",
  404: "Unknown id, or one of another project",
  409: "Conflict with the current state",
  413: "Body over 64 KiB",
  431: "URL or headers too large",
  415: "Body is not application/json",
  500: "Unexpected failure",
  503: "Database unavailable; safe to retry with the same Idempotency-Key",
};

/** The codes every route may answer (503 while the database cannot be reached). */
const COMMON_CODES = [
  "VALIDATION_ERROR",
  "UNAUTHORIZED",
  "INTERNAL_ERROR",
  "SERVICE_UNAVAILABLE",
] as const;
type CommonCode = (typeof COMMON_CODES)[number];

interface ErrorResponseConfig {
  description: string;
  content: {
    "application/json": {
      schema: typeof errorBodySchema;
      examples: Record<string, { summary: string; value: ErrorBody }>;
    };
  };
}

/** The error responses of a route answering codes `C` (and the common ones), by status. */
export type ErrorResponses<C extends ErrorCode> = {
  [S in (typeof ERROR_STATUS)[C | CommonCode]]: ErrorResponseConfig;
};

function errorExample(code: ErrorCode): ErrorBody {
  const { message, details } = exampleErrors[code];
  return {
    success: false,
    error: { code, message, ...(details === undefined ? {} : { details }) },
  };
}

/**
 * OpenAPI error responses for the given codes (plus 400, 401, 500 and 503, which every route has),
 * with an example body of each code, keyed by exactly the statuses those codes have.
 */
export function errorResponses<C extends ErrorCode = never>(...codes: C[]): ErrorResponses<C>;
export function errorResponses(...codes: ErrorCode[]): Record<number, ErrorResponseConfig> {
  const all = [...new Set<ErrorCode>([...COMMON_CODES, ...codes])];
  const statuses = [...new Set(all.map((code) => ERROR_STATUS[code]))].sort();
  const out: Record<number, ErrorResponseConfig> = {};
  for (const status of statuses) {
    const names = all.filter((code) => ERROR_STATUS[code] === status);
    const text = STATUS_TEXT[status] ?? "Error";
    const description = `${text}: ${names.map((code) => `\`${code}\``).join(", ")}`;
    const examples = Object.fromEntries(
      names.map((code) => [code, { summary: code, value: errorExample(code) }]),
    );
    out[status] = {
      description,
      content: { "application/json": { schema: errorBodySchema, examples } },
    };
  }
  return out;
}

/** A JSON request body for a route (required, application/json). */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true as const, content: { "application/json": { schema } } };
}

/**
 * A 200 JSON response for a route. Not `as const`: zod-openapi types a handler's responses only
 * from mutable response objects, and a readonly one would switch that check off.
 */
export function okJson<T extends z.ZodType>(schema: T, description: string) {
  return { 200: { description, content: { "application/json": { schema } } } };
}

/**
 * A 200 body `{ success: true, ...shape }`, documented with the example
 * `{ success: true, ...example }`.
 */
export function successResponse<T extends z.ZodRawShape>(
  shape: T,
  example: z.input<z.ZodObject<T>>,
) {
  return z
    .object({ success: z.literal(true), ...shape })
    .openapi({ example: { success: true, ...example } });
}

/**
 * A date `YYYY-MM-DD` or date-time `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z`, `±HH:MM` or no offset
 * (UTC), checked against the calendar (see src/dates.ts).
 */
export const isoDateOrDateTime = z
  .string()
  .max(64)
  .refine((s) => parseDateParam(s) !== null, {
    message:
      "must be a date YYYY-MM-DD or a date-time YYYY-MM-DDTHH:MM[:SS[.fff]] with Z, ±HH:MM or no offset, on the calendar",
  });

/** `accountId` (internal id or externalId) and `externalId` query parameters (docs/api.md#accounts). */
export const accountRefFields = {
  accountId: idString
    .optional()
    .openapi({ description: "Internal id or externalId", example: "customer-42" }),
  externalId: idString.optional().openapi({ example: "customer-42" }),
};

/** A query naming one account: `accountId` or `externalId` must be given (else 400). */
export function requiringAccount<T extends z.ZodRawShape>(shape: T) {
  return z.object({ ...accountRefFields, ...shape }).refine(
    (q) => {
      const ref = q as { accountId?: string; externalId?: string };
      return ref.accountId !== undefined || ref.externalId !== undefined;
    },
    {
      message: "accountId or externalId is required",
      path: ["accountId"],
    },
  );
}

/** `startDate` and `endDate` query parameters, both inclusive (docs/api.md#dates). */
export const dateRangeQuery = {
  startDate: isoDateOrDateTime
    .optional()
    .openapi({ description: "Inclusive", example: "2026-11-01" }),
  endDate: isoDateOrDateTime
    .optional()
    .openapi({ description: "Inclusive; a date covers the whole UTC day", example: "2026-11-30" }),
};

/**
 * The date-range rule of a query with `dateRangeQuery`: `startDate` is not after `endDate`
 * (a date-only end covering its whole day). Use as `.refine(datesInOrder, datesInOrderError)`.
 */
export function datesInOrder(q: { startDate?: string | undefined; endDate?: string | undefined }) {
  if (q.startDate === undefined || q.endDate === undefined) return true;
  const start = parseDateParam(q.startDate);
  const end = parseDateParam(q.endDate);
  return start === null || end === null || boundMs(start, false) <= boundMs(end, true);
}

/** The 400 of `datesInOrder`, on `query.startDate`. */
export const datesInOrderError = { message: "must not be after endDate", path: ["startDate"] };

/**
 * `limit` and `offset` query parameters with their defaults (`defaultLimit`, 0). Outside
 * 1–maxLimit, or a negative offset, is a 400 (docs/api.md#transaction-list).
 */
export function pageQuery(defaultLimit: number, maxLimit: number) {
  return {
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(maxLimit)
      .default(defaultLimit)
      .openapi({ description: `1-${maxLimit}, default ${defaultLimit}`, example: defaultLimit }),
    offset: z.coerce
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .default(0)
      .openapi({ description: "default 0", example: 0 }),
  };
}

export const paginationSchema = z
  .object({
    limit: z.number(),
    offset: z.number(),
    totalCount: z.number(),
    hasMore: z.boolean(),
  })
  .openapi({ example: { limit: 50, offset: 0, totalCount: 1, hasMore: false } });

/** `true`/`false` (also `1`/`0`) in a query string. */
export const queryBoolean = z
  .enum(["true", "false", "1", "0"])
  .transform((v) => v === "true" || v === "1");

/**
 * `format` of an export (docs/api.md#exports): `csv` (RFC 4180, the default) or `ndjson` (one
 * JSON object per line, each the list route's item).
 */
export const exportFormat = z
  .enum(["csv", "ndjson"])
  .default("csv")
  .openapi({ description: "`csv` (default) or `ndjson`", example: "csv" });
