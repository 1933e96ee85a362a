/**
 * The JSON structures of the Hrana protocol (versions 1–3, JSON encoding) that the test server
 * reads and writes, parsed with zod, and the conversion of values between Hrana and the `libsql`
 * package. See docs/operations.md, "The Hrana test server", for what the server implements.
 *
 * Values: `integer` travels as a decimal string (64-bit, exact), `float` as a JSON number,
 * `text` as a string, `blob` as base64, `null` as itself. The `libsql` package runs with
 * safe integers, so an INTEGER is a bigint and a REAL a number on the JavaScript side.
 */
import { z } from "zod";

export const valueSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("null") }),
  z.object({ type: z.literal("integer"), value: z.string().regex(/^-?\d{1,19}$/) }),
  z.object({ type: z.literal("float"), value: z.number() }),
  z.object({ type: z.literal("text"), value: z.string() }),
  z.object({ type: z.literal("blob"), base64: z.string() }),
]);
export type Value = z.infer<typeof valueSchema>;

export const stmtSchema = z.object({
  sql: z.string().nullish(),
  sql_id: z.number().int().nullish(),
  args: z.array(valueSchema).optional(),
  named_args: z.array(z.object({ name: z.string(), value: valueSchema })).optional(),
  want_rows: z.boolean().optional(),
});
export type Stmt = z.infer<typeof stmtSchema>;

export type BatchCond =
  | { type: "ok"; step: number }
  | { type: "error"; step: number }
  | { type: "not"; cond: BatchCond }
  | { type: "and"; conds: BatchCond[] }
  | { type: "or"; conds: BatchCond[] }
  | { type: "is_autocommit" };

export const batchCondSchema: z.ZodType<BatchCond> = z.lazy(() =>
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("ok"), step: z.number().int().min(0) }),
    z.object({ type: z.literal("error"), step: z.number().int().min(0) }),
    z.object({ type: z.literal("not"), cond: batchCondSchema }),
    z.object({ type: z.literal("and"), conds: z.array(batchCondSchema) }),
    z.object({ type: z.literal("or"), conds: z.array(batchCondSchema) }),
    z.object({ type: z.literal("is_autocommit") }),
  ]),
);

export const batchSchema = z.object({
  steps: z.array(z.object({ condition: batchCondSchema.nullish(), stmt: stmtSchema })),
});
export type Batch = z.infer<typeof batchSchema>;

const sqlRef = { sql: z.string().nullish(), sql_id: z.number().int().nullish() };

/** A request on a stream: HTTP's pipeline entries, and WebSocket's stream requests. */
export const streamRequestSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("close") }),
  z.object({ type: z.literal("execute"), stmt: stmtSchema }),
  z.object({ type: z.literal("batch"), batch: batchSchema }),
  z.object({ type: z.literal("sequence"), ...sqlRef }),
  z.object({ type: z.literal("describe"), ...sqlRef }),
  z.object({ type: z.literal("store_sql"), sql_id: z.number().int(), sql: z.string() }),
  z.object({ type: z.literal("close_sql"), sql_id: z.number().int() }),
  z.object({ type: z.literal("get_autocommit") }),
]);
export type StreamRequest = z.infer<typeof streamRequestSchema>;

export const pipelineBodySchema = z.object({
  baton: z.string().nullish(),
  requests: z.array(streamRequestSchema),
});

export interface Col {
  name: string | null;
  decltype: string | null;
}

export interface StmtResult {
  cols: Col[];
  rows: Value[][];
  affected_row_count: number;
  last_insert_rowid: string | null;
}

export interface BatchResult {
  step_results: (StmtResult | null)[];
  step_errors: (HranaErrorBody | null)[];
}

export interface HranaErrorBody {
  message: string;
  code: string;
}

/** What a stream request answers (its `type` is the request's). */
export type StreamResponse =
  | { type: "close" | "sequence" | "store_sql" | "close_sql" }
  | { type: "execute"; result: StmtResult }
  | { type: "batch"; result: BatchResult }
  | { type: "get_autocommit"; is_autocommit: boolean }
  | { type: "describe"; result: DescribeResult };

export interface DescribeResult {
  params: { name: string | null }[];
  cols: Col[];
  is_explain: boolean;
  is_readonly: boolean;
}

/** An error answered to a request (a failed statement, a protocol mistake). */
export class HranaError extends Error {
  readonly code: string;

  constructor(message: string, code: string) {
    super(message);
    this.name = "HranaError";
    this.code = code;
  }

  toBody(): HranaErrorBody {
    return { message: this.message, code: this.code };
  }
}

/** A value the `libsql` package binds or returns. */
export type SqlValue = null | bigint | number | string | Buffer;

/** A Hrana value as the `libsql` package binds it. */
export function toSql(value: Value): SqlValue {
  switch (value.type) {
    case "null":
      return null;
    case "integer":
      return BigInt(value.value);
    case "float":
      return value.value;
    case "text":
      return value.value;
    case "blob":
      return Buffer.from(value.base64, "base64");
  }
}

/** A value the `libsql` package returned (safe integers on), as Hrana sends it. */
export function fromSql(value: unknown): Value {
  if (value === null || value === undefined) return { type: "null" };
  if (typeof value === "bigint") return { type: "integer", value: value.toString() };
  if (typeof value === "number") return { type: "float", value };
  if (typeof value === "string") return { type: "text", value };
  if (value instanceof Uint8Array) {
    return { type: "blob", base64: Buffer.from(value).toString("base64") };
  }
  if (value instanceof ArrayBuffer) {
    return { type: "blob", base64: Buffer.from(value).toString("base64") };
  }
  throw new HranaError(`Unsupported value of type ${typeof value}`, "INTERNAL");
}

/**
 * An error of the `libsql` package as sqld reports it: the message prefixed with "SQLite
 * error: " and the primary result code (`SQLITE_CONSTRAINT`, not `…_PRIMARYKEY`).
 */
export function sqliteError(err: unknown): HranaError {
  if (err instanceof HranaError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const primary =
    typeof code === "string" && code.startsWith("SQLITE_")
      ? (/^SQLITE_[A-Z]+/.exec(code)?.[0] ?? code)
      : "SQLITE_UNKNOWN";
  const message = err instanceof Error ? err.message : String(err);
  return new HranaError(`SQLite error: ${message}`, primary);
}
