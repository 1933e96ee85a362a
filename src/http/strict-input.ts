/**
 * Strict input (docs/api.md#strict-input): a body field or query parameter that a route does not
 * define is a 400 `VALIDATION_ERROR` whose `details` name it as unknown, and a required field
 * that is absent is reported as missing (so a misspelt `"ammount"` reads as `amount` missing and
 * `ammount` unknown). The fields a route knows are read from its own zod schemas (the route
 * definitions of src/http/routes.ts), never from a list kept by hand; free-form values
 * (`metadata`, records) may hold any keys.
 */
import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { ZodError } from "zod";
import { validationError } from "../errors.ts";
import { isLosslessNumber } from "../json.ts";

/** One field of an object input: whether it must be given, and what its value may hold. */
interface InputField {
  required: boolean;
  shape: InputShape;
}

/** What a request part may hold: an object's fields, an array's elements, or anything. */
export type InputShape =
  | { kind: "free" }
  | { kind: "object"; fields: Map<string, InputField> }
  | { kind: "array"; element: InputShape };

const FREE: InputShape = { kind: "free" };

/** The request parts a route validates, with their shapes (set on the request by `declareInput`). */
export interface DeclaredInput {
  query?: InputShape;
  json?: InputShape;
}

/**
 * The shape of the values `schema` accepts: the fields of its objects (through optional,
 * nullable, default, pipes and unions), the elements of its arrays; anything else (a custom
 * type such as `metadata`, a record, a scalar) is free-form.
 */
export function inputShape(schema: z.core.$ZodType): InputShape {
  if (schema instanceof z.ZodObject) return objectShape(schema);
  if (
    schema instanceof z.ZodOptional ||
    schema instanceof z.ZodNullable ||
    schema instanceof z.ZodDefault ||
    schema instanceof z.ZodReadonly
  ) {
    return inputShape(schema.unwrap());
  }
  if (schema instanceof z.ZodPipe) {
    const inner = schema.in instanceof z.ZodTransform ? schema.out : schema.in;
    return inputShape(inner);
  }
  if (schema instanceof z.ZodArray) return { kind: "array", element: inputShape(schema.element) };
  if (schema instanceof z.ZodUnion) return unionShape(schema.options);
  return FREE;
}

function objectShape(schema: z.ZodObject): InputShape {
  // An object that keeps keys it does not name (a catchall) is free-form.
  const catchall = schema.def.catchall;
  if (catchall && !(catchall instanceof z.ZodNever)) return FREE;
  const fields = new Map<string, InputField>();
  for (const [key, field] of Object.entries(schema.shape)) {
    fields.set(key, { required: field._zod.optin !== "optional", shape: inputShape(field) });
  }
  return { kind: "object", fields };
}

/** A union of objects knows the fields of each (required only where every option requires). */
function unionShape(options: readonly z.core.$ZodType[]): InputShape {
  const shapes = options.map(inputShape);
  const fields = new Map<string, InputField>();
  for (const shape of shapes) {
    if (shape.kind !== "object") return FREE;
    for (const [key, field] of shape.fields) {
      const known = fields.get(key);
      fields.set(key, known ? { ...known, required: known.required && field.required } : field);
    }
  }
  for (const [key, field] of fields) {
    const inEvery = shapes.every((s) => s.kind === "object" && s.fields.has(key));
    if (!inEvery) fields.set(key, { ...field, required: false });
  }
  return { kind: "object", fields };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    value !== null && typeof value === "object" && !Array.isArray(value) && !isLosslessNumber(value)
  );
}

/** The paths (segments) of every key in `value` that `shape` does not define. */
export function unknownFields(shape: InputShape, value: unknown, path: string[] = []): string[][] {
  if (shape.kind === "array") {
    if (!Array.isArray(value)) return [];
    return value.flatMap((item, i) => unknownFields(shape.element, item, [...path, String(i)]));
  }
  if (shape.kind !== "object" || !isPlainObject(value)) return [];
  const out: string[][] = [];
  for (const key of Object.keys(value)) {
    const field = shape.fields.get(key);
    if (!field) out.push([...path, key]);
    else out.push(...unknownFields(field.shape, value[key], [...path, key]));
  }
  return out;
}

/**
 * Whether the field at `path` is one `shape` requires and `value` does not hold at all (the
 * object around it is there, the key is not).
 */
export function isMissing(
  shape: InputShape,
  value: unknown,
  path: readonly PropertyKey[],
): boolean {
  let current: InputShape = shape;
  let held: unknown = value;
  for (const [i, segment] of path.entries()) {
    if (current.kind === "array") {
      if (!Array.isArray(held)) return false;
      current = current.element;
      held = held[Number(segment)];
      continue;
    }
    if (current.kind !== "object" || !isPlainObject(held)) return false;
    const field = current.fields.get(String(segment));
    if (!field) return false;
    if (i === path.length - 1) return field.required && !Object.hasOwn(held, String(segment));
    current = field.shape;
    held = held[String(segment)];
  }
  return false;
}

/**
 * Route middleware declaring the shapes of the route's query and JSON body, read by the
 * validation hook (src/errors.ts) from the request's `declaredInput` variable. A route that
 * declares no query (every POST) refuses any query parameter here.
 * @throws ApiError VALIDATION_ERROR naming each query parameter of a route that takes none
 */
export function declareInput(schemas: {
  query?: z.ZodType;
  json?: z.ZodType;
}): MiddlewareHandler<{ Variables: { declaredInput: DeclaredInput } }> {
  const declared: DeclaredInput = {};
  if (schemas.query) declared.query = inputShape(schemas.query);
  if (schemas.json) declared.json = inputShape(schemas.json);
  return async (c, next) => {
    // A route without query parameters (every POST) takes none: any given is unknown.
    if (!declared.query && c.req.url.includes("?")) {
      const unknown = Object.keys(c.req.query()).map((name) => [name]);
      if (unknown.length > 0) throw validationError("query", undefined, unknown);
    }
    c.set("declaredInput", declared);
    await next();
  };
}

/** The shape the route declared for request part `target` and the raw value sent, if any. */
export async function declaredPart(
  c: Context,
  target: string,
): Promise<{ shape: InputShape; value: unknown } | undefined> {
  const declared: DeclaredInput | undefined = c.get("declaredInput");
  if (target === "json" && declared?.json)
    return { shape: declared.json, value: await c.req.json() };
  if (target === "query" && declared?.query) return { shape: declared.query, value: c.req.query() };
  return undefined;
}

/**
 * The zod-openapi default hook: a failed validation, or a field or parameter the route does not
 * define, becomes a 400 in the API's error format.
 */
export async function validationHook(
  result: { target: string } & ({ success: true } | { success: false; error: ZodError }),
  c: Context,
): Promise<Response | undefined> {
  const part = await declaredPart(c, result.target);
  const unknown = part ? unknownFields(part.shape, part.value) : [];
  if (result.success && unknown.length === 0) return undefined;
  const missing = (path: readonly PropertyKey[]) =>
    part !== undefined && isMissing(part.shape, part.value, path);
  const target = result.target === "json" ? "body" : result.target;
  const err = validationError(target, result.success ? undefined : result.error, unknown, missing);
  return c.json(err.toBody(), err.status);
}
