/**
 * Running a batch (docs/api.md#batches, docs/design.md#batches): each operation is validated and
 * executed by its route's own code (`WriteOperation` of src/http/handlers.ts) and keyed as a
 * single request is (src/http/idempotency.ts); this module adds the loop and the transaction
 * boundary, nothing of any route's rules.
 *
 * A whole batch is one unit of the write path: on SQLite it goes through the single writer as
 * a unit of its own (a transaction of its own, `RunOptions.alone`), on PostgreSQL it is one
 * transaction. Atomic: the operations run one after the other and the first failure in array
 * order (a run's failure, or a refusal by its route before running) rolls the unit back. Independent: each operation runs in a SAVEPOINT of its own, so a failure rolls back
 * that operation alone and the others commit together (steps.ts).
 */
import type { WriteQueue } from "../db/write-path.ts";
import { ApiError } from "../errors.ts";
import type { WriteOperation } from "../http/handlers.ts";
import { findStored, type KeyedRequest, requestHash, storeAnswer } from "../http/idempotency.ts";
import { stringifyJson, stringifyJsonFast } from "../json.ts";
import type { Logger } from "../logger.ts";
import { lockBatchAccounts } from "./locks.ts";
import type { BatchEnvelope } from "./schemas.ts";
import {
  atomicStep,
  BatchAborted,
  failed,
  independentStep,
  NeedsSavepoints,
  type OperationResult,
  type PassMode,
  type Prepared,
  refusedAlone,
  refusedAtomic,
  runInOrder,
  type Step,
  Ungroup,
} from "./steps.ts";

export type { OperationResult, Prepared } from "./steps.ts";

/** The 200 body of a well-formed batch. */
export interface BatchAnswer {
  success: true;
  atomic: boolean;
  committed: number;
  results: OperationResult[];
}

/** What a batch runs with. */
export interface BatchContext {
  queue: WriteQueue;
  projectId: string;
  logger: Logger;
  /** The batch's own Idempotency-Key (path `/v1/batch`, hash of the whole body), if any. */
  keyed: KeyedRequest | undefined;
}

/** A batch answer replayed from its Idempotency-Key: the stored text. */
export interface ReplayedBatch {
  replayed: true;
  text: string;
}

/** What `prepareOperations` checks each operation against. */
export interface PrepareOptions {
  projectId: string;
  /** The batch's own Idempotency-Key: an operation may not reuse it. */
  batchKey: string | undefined;
  /** A single request's body limit, in bytes, which each operation's body keeps. */
  bodyLimitBytes: number;
}

/**
 * Validates each operation with its route (`prepare`), outside any transaction.
 * @param operations the envelope's operations (paths already known to `routes`)
 * @returns one `Prepared` per operation, in order; an operation refused here holds its error
 *   (413 PAYLOAD_TOO_LARGE for a body over the limit, as written by the exact JSON writer;
 *   400 VALIDATION_ERROR from its route; 409 IDEMPOTENCY_KEY_REUSED for the batch's own key)
 */
export async function prepareOperations(
  operations: BatchEnvelope["operations"],
  routes: ReadonlyMap<string, WriteOperation>,
  options: PrepareOptions,
): Promise<Prepared[]> {
  const { projectId, batchKey, bodyLimitBytes } = options;
  const prepared: Prepared[] = [];
  for (const [index, op] of operations.entries()) {
    try {
      const route = routes.get(op.path);
      if (!route) throw new Error(`no write route registered for ${op.path}`);
      if (Buffer.byteLength(stringifyJsonFast(op.body)) > bodyLimitBytes) {
        throw new ApiError(
          "PAYLOAD_TOO_LARGE",
          `Request body is larger than ${bodyLimitBytes} bytes`,
        );
      }
      if (op.idempotencyKey !== undefined && op.idempotencyKey === batchKey) {
        throw new ApiError(
          "IDEMPOTENCY_KEY_REUSED",
          "This Idempotency-Key is the batch's own, used with another path or body",
        );
      }
      const write = await route.prepare(op.body, projectId);
      const keyed =
        op.idempotencyKey === undefined
          ? undefined
          : { projectId, key: op.idempotencyKey, path: op.path, hash: requestHash(op.body) };
      const ref = op.body.accountId;
      prepared.push({ index, write, keyed, refs: typeof ref === "string" ? [ref] : [] });
    } catch (error) {
      prepared.push({ index, error });
    }
  }
  return prepared;
}

/** The answer of an atomic batch whose operation `failedIndex` failed with `error`. */
function aborted(count: number, abort: BatchAborted, logger: Logger): BatchAnswer {
  const { failedIndex } = abort;
  const refusal = new ApiError(
    "BATCH_ABORTED",
    `Not run: operation ${failedIndex} of this atomic batch failed`,
    { failedIndex },
  );
  const results = Array.from({ length: count }, (_, index) =>
    index === failedIndex
      ? failed(index, abort.error, logger)
      : { index, status: refusal.status, replayed: false, body: refusal.toBody() },
  );
  return { success: true, atomic: true, committed: 0, results };
}

/** Counts the results whose effects were committed (200, not replayed). */
function answer(atomic: boolean, results: OperationResult[]): BatchAnswer {
  const committed = results.filter((r) => r.status === 200 && !r.replayed).length;
  return { success: true, atomic, committed, results };
}

/**
 * Runs the batch as one unit of the write path (see the module comment). An independent batch
 * first runs without a savepoint per operation (two statements fewer each): when every
 * operation succeeds that pass commits; when one fails it rolls back whole and the batch runs
 * again with savepoints, so that only the failures roll back. A pass groups the plain debits
 * (plain-debits.ts: a group only holds debits that succeed); when a group fails as a statement,
 * the pass runs again without grouping. So a batch runs at most three passes.
 * @returns the answer, or the stored answer of the batch's own Idempotency-Key
 * @throws what the write path throws for the whole unit (503 when the database cannot write
 *   or be reached, or when conflicts outlasted the retries); nothing of the batch is kept then
 */
export async function runBatch(
  ctx: BatchContext,
  atomic: boolean,
  ops: Prepared[],
): Promise<BatchAnswer | ReplayedBatch> {
  let mode: PassMode = { savepoints: false, grouped: true };
  for (;;) {
    try {
      return await runPass(ctx, atomic, ops, mode);
    } catch (err) {
      if (err instanceof BatchAborted) return aborted(ops.length, err, ctx.logger);
      if (err instanceof NeedsSavepoints && !mode.savepoints) mode = { ...mode, savepoints: true };
      else if (err instanceof Ungroup && mode.grouped) mode = { ...mode, grouped: false };
      else throw err;
    }
  }
}

/** One pass of the batch in one unit (see `PassMode`). */
function runPass(
  ctx: BatchContext,
  atomic: boolean,
  ops: Prepared[],
  mode: PassMode,
): Promise<BatchAnswer | ReplayedBatch> {
  return ctx.queue.run(
    async (trx, nowMs) => {
      if (ctx.keyed) {
        const stored = await findStored(trx, nowMs, ctx.keyed);
        if (stored !== null) return { replayed: true as const, text: stored };
      }
      const refs = ops.flatMap((op) => ("refs" in op ? op.refs : []));
      await lockBatchAccounts(trx, ctx.projectId, refs);
      // Every operation answers in array order: in an atomic batch the first to fail, whether
      // its route refused it before running or it failed when run, is the batch's failure.
      const step: Step = (op, work) =>
        atomic ? atomicStep(op, work) : independentStep(trx, op, work, ctx.logger, mode);
      const results = await runInOrder(
        { trx, nowMs, projectId: ctx.projectId },
        ops,
        mode.grouped,
        step,
        atomic ? refusedAtomic : refusedAlone(ctx.logger),
      );
      const done = answer(atomic, results);
      if (ctx.keyed && results.every((r) => r.status === 200)) {
        await storeAnswer(trx, nowMs, ctx.keyed, stringifyJson(done));
      }
      return done;
    },
    { alone: true },
  );
}
