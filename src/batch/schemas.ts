/**
 * `POST /v1/batch` (docs/api.md#batches): the write routes a batch may run, the envelope that
 * validates a batch, and the documented schemas, in which an operation is a union discriminated
 * by `path` whose `body` is that route's own body schema (so the typed client checks it).
 *
 * The envelope checks only what makes a batch malformed (contract: an unknown `path`, a `body`
 * that is not an object, an `idempotencyKey` outside 1–255 characters, 0 or more than 1,000
 * operations); each operation's body is then validated by its route (src/http/handlers.ts,
 * `WriteOperation`), and a body its route refuses is that operation's 400, not the batch's.
 */
import { z } from "@hono/zod-openapi";
import { accountRoutes } from "../accounts/routes.ts";
import { inlineErrorBodySchema, successResponse } from "../http/schemas.ts";
import { isLosslessNumber } from "../json.ts";
import { ledgerRoutes } from "../ledger/routes.ts";
import { reservationRoutes } from "../reservations/routes.ts";
import { transactionRoutes } from "../transactions/routes.ts";
import { transferRoutes } from "../transactions/transfer-routes.ts";
import { usageRoutes } from "../usage/routes.ts";

/** Most operations in one batch. */
export const MAX_BATCH_OPERATIONS = 1000;

/** Largest batch request body, in bytes (1 MiB; a single request's limit is 64 KiB). */
export const BATCH_BODY_LIMIT_BYTES = 1024 * 1024;

/** The write routes a batch may run, in the contract's order. */
export const batchOperationRoutes = [
  accountRoutes.create,
  accountRoutes.update,
  ledgerRoutes.add,
  ledgerRoutes.deduct,
  transactionRoutes.create,
  transactionRoutes.reverse,
  reservationRoutes.create,
  reservationRoutes.confirm,
  reservationRoutes.cancel,
  usageRoutes.record,
  transferRoutes.transfer,
] as const;

type BatchRoute = (typeof batchOperationRoutes)[number];

/** The paths of `batchOperationRoutes`. */
export type BatchPath = BatchRoute["path"];

const [firstPath, ...otherPaths] = batchOperationRoutes.map((route) => route.path);

const idempotencyKey = z.string().min(1).max(255).openapi({
  description: "The operation's Idempotency-Key (same key space as the header of single requests)",
  example: "import-2026-11-21-0001",
});

/** A JSON object (not an array, a number or null): what an operation's `body` must be. */
const jsonObject = z.custom<Record<string, unknown>>(
  (value) =>
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    !isLosslessNumber(value),
  { message: "must be an object" },
);

/** The batch as validated before anything runs (see the module comment). */
export const batchEnvelope = z.strictObject({
  atomic: z.boolean().optional(),
  operations: z
    .array(
      z.strictObject({
        path: z.enum([firstPath ?? "", ...otherPaths]),
        body: jsonObject,
        idempotencyKey: idempotencyKey.optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_OPERATIONS),
});

/** A validated batch. */
export type BatchEnvelope = z.output<typeof batchEnvelope>;

/** The documented operation of `route`: its path, its route's body schema, and a key. */
function operationOf<R extends BatchRoute>(route: R) {
  return z.strictObject({
    path: z.literal(route.path),
    body: route.request.body.content["application/json"].schema,
    idempotencyKey: idempotencyKey.optional(),
  });
}

/** The documented request body: operations as a union discriminated by `path`. */
export const batchBody = z
  .strictObject({
    atomic: z.boolean().optional().openapi({
      description: "All operations commit together or none does (default false: each on its own)",
      example: false,
    }),
    operations: z
      .array(
        z
          .discriminatedUnion("path", [
            operationOf(accountRoutes.create),
            operationOf(accountRoutes.update),
            operationOf(ledgerRoutes.add),
            operationOf(ledgerRoutes.deduct),
            operationOf(transactionRoutes.create),
            operationOf(transactionRoutes.reverse),
            operationOf(reservationRoutes.create),
            operationOf(reservationRoutes.confirm),
            operationOf(reservationRoutes.cancel),
            operationOf(usageRoutes.record),
            operationOf(transferRoutes.transfer),
          ])
          .openapi({ discriminator: { propertyName: "path" } }),
      )
      .min(1)
      .max(MAX_BATCH_OPERATIONS),
  })
  .openapi("BatchRequest", {
    example: {
      atomic: false,
      operations: [
        {
          path: "/v1/accounts/create",
          body: { externalId: "customer-43" },
          idempotencyKey: "import-2026-11-21-0001",
        },
        {
          path: "/v1/accounts/credits/add",
          body: { accountId: "customer-43", amount: 10 },
          idempotencyKey: "import-2026-11-21-0002",
        },
      ],
    },
  });

/** The 200 body of one of the batch's routes. */
function okSchemaOf<R extends BatchRoute>(route: R) {
  return route.responses[200].content["application/json"].schema;
}

/** One operation's result: its index, the route's own status and body, and whether replayed. */
const batchResult = z.object({
  index: z.number().int().min(0).openapi({ example: 0 }),
  status: z.number().int().openapi({ description: "The route's own HTTP status", example: 200 }),
  replayed: z.boolean().openapi({
    description: "True when `idempotencyKey` replayed a stored answer (nothing ran)",
    example: false,
  }),
  body: z
    .union([
      okSchemaOf(accountRoutes.create),
      okSchemaOf(accountRoutes.update),
      okSchemaOf(ledgerRoutes.add),
      okSchemaOf(ledgerRoutes.deduct),
      // Before the manual transaction's, whose body (success, transaction) a reversal's also
      // has: a union takes the first member that matches.
      okSchemaOf(transactionRoutes.reverse),
      okSchemaOf(transactionRoutes.create),
      okSchemaOf(reservationRoutes.create),
      okSchemaOf(reservationRoutes.confirm),
      okSchemaOf(reservationRoutes.cancel),
      okSchemaOf(usageRoutes.record),
      okSchemaOf(transferRoutes.transfer),
      inlineErrorBodySchema,
    ])
    .openapi({ description: "The route's own 200 body, or the error body of a failure" }),
});

/** The 200 body of a well-formed batch. */
export const batchResponse = successResponse(
  {
    atomic: z.boolean(),
    committed: z.number().int().min(0).openapi({
      description: "Operations whose effects are now in the database (replays not counted)",
    }),
    results: z.array(batchResult),
  },
  {
    atomic: false,
    committed: 1,
    results: [
      {
        index: 0,
        status: 200,
        replayed: false,
        body: {
          success: true,
          accountId: "acc_01M7YK07B38628KR5DHES0CNDB",
          externalId: "customer-42",
          balance: 21.54,
          deducted: 1.25,
          transactionId: "txn_01M7YK6RWFSRRMMFG64WVR65TZ",
        },
      },
      {
        index: 1,
        status: 402,
        replayed: false,
        body: {
          success: false,
          error: {
            code: "INSUFFICIENT_CREDITS",
            message: "Insufficient available credits",
            details: { available: 21.54, requested: 50 },
          },
        },
      },
    ],
  },
);
