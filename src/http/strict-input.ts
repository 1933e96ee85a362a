/**
 * Strict input (docs/api.md#strict-input): a body field or query parameter that a route does not
 * define is a 400 `VALIDATION_ERROR` whose `details` name it as unknown, and a required field
 * that is absent is reported as missing (so a misspelt `"ammount"` reads as `amount` missing and
 * `ammount` unknown). The fields a route knows are read from its own zod schemas (the route
 * definitions of src/http/routes.ts), never from a list kept by hand; free-form values
 * (`metadata`, records) may hold any keys.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import type { ZodError } from "zod";
import { validationError } from "../errors.ts";
import { isLosslessNumber } from "../json.ts";
import { sentJson } from "./body.ts";

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

/** The request parts a route validates, with their shapes (recorded by `declareInput`). */
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

/** The shapes each route declared, by path and method (`/v1/accounts/create` → `POST`). */
const declaredRoutes = new Map<string, Map<string, DeclaredInput>>();

/**
 * Records the shapes of route `method path`'s query and JSON body, computed once, when the route
 * is defined (src/http/routes.ts): the validation hook finds them by the route a request matched,
 * so strict input adds no middleware to a request. A route that declares no query (every POST)
 * refuses any query parameter.
 */
export function declareInput(
  method: string,
  path: string,
  schemas: { query?: z.ZodType; json?: z.ZodType },
): void {
  const declared: DeclaredInput = {};
  if (schemas.query) declared.query = inputShape(schemas.query);
  if (schemas.json) declared.json = inputShape(schemas.json);
  const byMethod = declaredRoutes.get(path) ?? new Map<string, DeclaredInput>();
  byMethod.set(method.toUpperCase(), declared);
  declaredRoutes.set(path, byMethod);
}

/** The shapes declared by the route whose handler (a validator) runs now, if it declared any. */
function declaredFor(c: Context): DeclaredInput | undefined {
  const route = matchedRoutes(c)[c.req.routeIndex];
  return route && declaredRoutes.get(route.path)?.get(route.method);
}

/**
 * Whether every parameter name in `url`'s query is one of `fields`, read from the URL's text
 * (no parse): a name that is percent-encoded, empty or unknown answers false, and the caller
 * then reads the parsed query, which decides.
 */
function queryNamesKnown(url: string, fields: ReadonlyMap<string, InputField>): boolean {
  const start = url.indexOf("?");
  if (start < 0) return true;
  let at = start + 1;
  while (at <= url.length) {
    const amp = url.indexOf("&", at);
    const end = amp < 0 ? url.length : amp;
    const eq = url.indexOf("=", at);
    const name = url.slice(at, eq >= 0 && eq < end ? eq : end);
    if (!fields.has(name)) return false;
    at = end + 1;
  }
  return true;
}

/** The names of `c`'s query parameters, each as a path of one segment (for `details`). */
function queryNames(c: Context): string[][] {
  return Object.keys(c.req.query()).map((name) => [name]);
}

/**
 * The shape the route declared for request part `target` and the raw value sent, if any: the
 * body as parsed exactly (src/http/body.ts), the query as Hono parses it.
 */
function declaredPart(
  c: Context,
  declared: DeclaredInput | undefined,
  target: string,
): { shape: InputShape; value: unknown } | undefined {
  if (target === "json" && declared?.json) return { shape: declared.json, value: sentJson(c.req) };
  if (target === "query" && declared?.query) return { shape: declared.query, value: c.req.query() };
  return undefined;
}

/**
 * The zod-openapi default hook: a failed validation, or a field or parameter the route does not
 * define, becomes a 400 in the API's error format. A valid request whose query names only known
 * parameters returns at once, without parsing its query again.
 * @throws ApiError VALIDATION_ERROR naming each query parameter of a route that takes none
 */
export function validationHook(
  result: { target: string } & ({ success: true } | { success: false; error: ZodError }),
  c: Context,
): Response | undefined {
  const declared = declaredFor(c);
  if (result.target === "json" && declared && !declared.query && c.req.url.includes("?")) {
    // A route without query parameters (every POST) takes none: any given is unknown.
    const unknown = queryNames(c);
    if (unknown.length > 0) throw validationError("query", undefined, unknown);
  }
  const shape = result.target === "query" ? declared?.query : undefined;
  if (result.success && shape?.kind === "object" && queryNamesKnown(c.req.url, shape.fields)) {
    return undefined;
  }
  const part = declaredPart(c, declared, result.target);
  const unknown = part ? unknownFields(part.shape, part.value) : [];
  if (result.success && unknown.length === 0) return undefined;
  const missing = (path: readonly PropertyKey[]) =>
    part !== undefined && isMissing(part.shape, part.value, path);
  const target = result.target === "json" ? "body" : result.target;
  const err = validationError(target, result.success ? undefined : result.error, unknown, missing);
  return c.json(err.toBody(), err.status);
}
