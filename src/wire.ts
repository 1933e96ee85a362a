/**
 * The types of API objects as the service builds them (docs/design.md#typed-routes): an object
 * described by a zod response schema, where every number may also be an `ExactDecimal` (an
 * amount in credits or USD, written to the wire as its exact literal). Mappers from database rows
 * to API objects declare their return type with `WireOf<schema>`, so a field the schema does not
 * declare, a missing one or a renamed one fails the type check.
 */
import type { z } from "@hono/zod-openapi";
import type { ExactDecimal } from "./money.ts";

/** `T` as a handler may build it: every number may also be an `ExactDecimal`. */
export type Wire<T> = T extends number
  ? number | ExactDecimal
  : T extends readonly (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

/** The API object described by a response schema, as the service builds it. */
export type WireOf<S extends z.ZodType> = Wire<z.infer<S>>;
