/**
 * `POST /v1/batch` (docs/api.md#batches): up to 1,000 operations of the write routes in one
 * request, each run by its route's own code (src/batch/run.ts).
 *
 * The route is documented with `batchBody`, whose operations carry their routes' body schemas,
 * but validated with `batchEnvelope`: a body its route refuses is that operation's 400, not the
 * batch's, so zod-openapi's validator (which would refuse the whole batch) is not used.
 */

import { validationError } from "../errors.ts";
import type { App, AppDeps } from "../http/context.ts";
import { writeOperations } from "../http/handlers.ts";
import { idempotencyKeyOf, requestHash } from "../http/idempotency.ts";
import { resourceRoutes } from "../http/routes.ts";
import { parseJsonVerbatim, stringifyJsonFast } from "../json.ts";
import { type BatchAnswer, prepareOperations, runBatch } from "./run.ts";
import { batchBody, batchEnvelope, batchResponse } from "./schemas.ts";

/** The batch route. */
export const batchRoutes = resourceRoutes("Batches", (route) => ({
  run: route.post("/v1/batch", "Run many write operations in one request", {
    operationId: "runBatch",
    description:
      "Runs 1 to 1,000 operations of the write routes in array order, each validated and " +
      "executed exactly as its route would with `idempotencyKey` as its Idempotency-Key; an " +
      "operation sees the effects of those before it. `results` holds each operation's own " +
      "status and body. With `atomic: true` all commit together or none does: the failing " +
      "operation answers its error and every other one 409 `BATCH_ABORTED`. A malformed batch " +
      "is a 400 and nothing runs. The body may be up to 1 MiB.",
    body: batchBody,
    ok: batchResponse,
    errors: ["PAYLOAD_TOO_LARGE"],
  }),
}));

/**
 * Registers `POST /v1/batch`; call it after every write route it runs has been registered
 * (`writeRoute` records them).
 */
export function registerBatchRoutes(app: App, deps: AppDeps): void {
  const r = batchRoutes;
  app.openAPIRegistry.registerPath(r.run);
  app.post(r.run.path, async (c) => {
    const raw: unknown = await c.req.json();
    const envelope = batchEnvelope.safeParse(raw);
    if (!envelope.success) throw validationError("body", envelope.error);
    const { atomic = false, operations } = envelope.data;
    const projectId = c.get("projectId");
    const key = idempotencyKeyOf(c);
    const keyed =
      key === undefined ? undefined : { projectId, key, path: r.run.path, hash: requestHash(raw) };
    const ops = await prepareOperations(operations, writeOperations(app), {
      projectId,
      batchKey: key,
      bodyLimitBytes: deps.config.BODY_LIMIT_BYTES,
    });
    const ctx = { queue: deps.queue, projectId, logger: deps.logger, keyed };
    const result = await runBatch(ctx, atomic, ops);
    // Up to 1,000 results: written by the exact JSON writer's direct walk (the same text as
    // `c.json`'s, src/json.ts), which is about ten times faster.
    const type = { "Content-Type": "application/json" };
    if (!("text" in result)) return c.newResponse(answerText(result), 200, type);
    c.header("Idempotent-Replayed", "true");
    // The stored text is this route's answer to the first request with this key and body.
    return c.json(parseJsonVerbatim(result.text), 200);
  });
}

/** The JSON text of a batch's answer. */
function answerText(answer: BatchAnswer): string {
  return stringifyJsonFast(answer);
}
