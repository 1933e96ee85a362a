/**
 * Running a batch (docs/api.md#batches, docs/design.md#batches): each operation is validated and
 * executed by its route's own code (`WriteOperation` of src/http/handlers.ts) and keyed as a
 * single request is (src/http/idempotency.ts); this module adds the loop and the transaction
 * boundary, nothing of any route's rules.
 *
 * A whole batch is one unit of the write path: on SQLite it goes through the single writer as
 * one unit (one group commit), on PostgreSQL it is one transaction. Atomic: the operations run
 * one after the other and the first failure rolls the unit back. Independent: each operation
 * runs in a SAVEPOINT of its own, so a failure rolls back that operation alone and the others
 * commit together.
 */
import type { Transaction } from "kysely";
import { locksRows } from "../db/engine.ts";
import { isRetryableConflict, isUnavailable } from "../db/postgres.ts";
import { inSavepoint } from "../db/savepoint.ts";
import type { DB } from "../db/schema.ts";
import { isStorageFailure } from "../db/storage-errors.ts";
import type { WriteQueue, WriteUnit } from "../db/write-path.ts";
import { ApiError } from "../errors.ts";
import type { PreparedWrite, WriteOperation } from "../http/handlers.ts";
import { findStored, type KeyedRequest, requestHash, storeAnswer } from "../http/idempotency.ts";
import { parseJsonVerbatim, stringifyJson } from "../json.ts";
import type { Logger } from "../logger.ts";
import { lockBatchAccounts } from "./locks.ts";
import { MAX_DEBITS_PER_CALL, runPlainDebits } from "./pg-debits.ts";
import type { BatchEnvelope } from "./schemas.ts";

/** One operation's answer: the route's own status and body. */
export interface OperationResult {
  index: number;
  status: number;
  replayed: boolean;
  body: unknown;
}

/** The 200 body of a well-formed batch. */
export interface BatchAnswer {
  success: true;
  atomic: boolean;
  committed: number;
  results: OperationResult[];
}

/** An operation ready to run: its route's unit, or the error that stops it before it runs. */
export type Prepared =
  | { index: number; write: PreparedWrite; keyed: KeyedRequest | undefined; refs: string[] }
  | { index: number; error: unknown };

/** An operation its route accepted. */
type Runnable = Extract<Prepared, { write: unknown }>;

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
      if (Buffer.byteLength(stringifyJson(op.body)) > bodyLimitBytes) {
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

/** Runs one operation in `trx` as its route would with its key (docs/api.md#idempotency). */
async function runOperation(
  trx: Transaction<DB>,
  nowMs: number,
  op: Runnable,
  unit: WriteUnit<unknown> = op.write.unit,
): Promise<{ replayed: boolean; body: unknown }> {
  if (op.keyed === undefined) return { replayed: false, body: await unit(trx, nowMs) };
  const stored = await findStored(trx, nowMs, op.keyed);
  if (stored !== null) return { replayed: true, body: parseJsonVerbatim(stored) };
  const body = await unit(trx, nowMs);
  await storeAnswer(trx, nowMs, op.keyed, stringifyJson(body));
  return { replayed: false, body };
}

/**
 * True for an error after which the batch's transaction cannot go on, or that the write path
 * must see to retry the whole unit (a PostgreSQL conflict): it is rethrown, not an answer.
 */
function endsUnit(error: unknown): boolean {
  return isStorageFailure(error) || isRetryableConflict(error) || isUnavailable(error);
}

/** The result of an operation that failed with `error`, as the route alone would answer it. */
function failed(index: number, error: unknown, logger: Logger): OperationResult {
  if (error instanceof ApiError) {
    return { index, status: error.status, replayed: false, body: error.toBody() };
  }
  const { name, message } = error instanceof Error ? error : { name: "unknown", message: "" };
  logger.error({ route: "/v1/batch", index, err: { name, message } }, "unhandled error");
  const internal = new ApiError("INTERNAL_ERROR", "An unexpected error occurred");
  return { index, status: internal.status, replayed: false, body: internal.toBody() };
}

/** Thrown out of an atomic batch's unit so that it rolls back: the operation that failed. */
class BatchAborted extends Error {
  constructor(
    readonly failedIndex: number,
    readonly error: unknown,
  ) {
    super("batch aborted");
  }
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
 * Thrown out of an independent batch's first pass, which runs without savepoints, when an
 * operation fails: that pass rolls back whole and the batch runs again with a savepoint per
 * operation.
 */
class NeedsSavepoints extends Error {}

/**
 * Thrown out of a pass whose grouped plain debits (pg-debits.ts) failed as a statement: which
 * operation failed is unknown, so the pass rolls back whole and runs again without grouping.
 */
class Ungroup extends Error {}

/** How a pass runs: a savepoint per operation, plain debits grouped (PostgreSQL). */
interface PassMode {
  savepoints: boolean;
  grouped: boolean;
}

/**
 * Runs the batch as one unit of the write path (see the module comment). An independent batch
 * first runs without a savepoint per operation (two statements fewer each): when every
 * operation succeeds that pass commits; when one fails it rolls back whole and the batch runs
 * again with savepoints, so that only the failures roll back. A first pass groups the plain
 * debits (pg-debits.ts); when a group fails as a statement, the pass runs again without.
 * @returns the answer, or the stored answer of the batch's own Idempotency-Key
 * @throws what the write path throws for the whole unit (503 when the database cannot write
 *   or be reached, or when conflicts outlasted the retries); nothing of the batch is kept then
 */
export async function runBatch(
  ctx: BatchContext,
  atomic: boolean,
  ops: Prepared[],
): Promise<BatchAnswer | ReplayedBatch> {
  const savepoints = { savepoints: true, grouped: false };
  for (const mode of [
    { savepoints: false, grouped: true },
    { savepoints: false, grouped: false },
  ]) {
    try {
      return await runPass(ctx, atomic, ops, mode);
    } catch (err) {
      if (err instanceof BatchAborted) return aborted(ops.length, err, ctx.logger);
      if (err instanceof NeedsSavepoints) return runPass(ctx, atomic, ops, savepoints);
      if (!(err instanceof Ungroup)) throw err;
    }
  }
  return runPass(ctx, atomic, ops, savepoints);
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
      // An operation its route refused before running aborts an atomic batch before anything runs.
      const refused = atomic ? ops.find((op) => "error" in op) : undefined;
      if (refused && "error" in refused) throw new BatchAborted(refused.index, refused.error);
      const grouped = mode.grouped && locksRows(trx);
      const step: Step = (op, work) =>
        atomic ? atomicStep(op, work) : independentStep(trx, op, work, ctx.logger, mode);
      const results = await runInOrder({ trx, nowMs, ctx }, ops, grouped, step);
      const done = answer(atomic, results);
      if (ctx.keyed && results.every((r) => r.status === 200)) {
        await storeAnswer(trx, nowMs, ctx.keyed, stringifyJson(done));
      }
      return done;
    },
    { alone: true },
  );
}

/** Runs one operation's `work` and answers its result, or throws as its mode does. */
type Step = (
  op: Runnable,
  work: () => Promise<{ replayed: boolean; body: unknown }>,
) => Promise<OperationResult>;

/**
 * Runs the operations in order with `step`; with `mode.grouped`, each run of consecutive plain
 * debits without a key in one round trip (pg-debits.ts), the first that is not plain on its
 * general path through `step`. An operation refused before running is its own failed result.
 * @throws Ungroup when a group fails as a statement (unless that failure ends the unit)
 */
async function runInOrder(
  on: { trx: Transaction<DB>; nowMs: number; ctx: BatchContext },
  ops: Prepared[],
  grouped: boolean,
  step: Step,
): Promise<OperationResult[]> {
  const { trx, nowMs, ctx } = on;
  const results: OperationResult[] = [];
  for (let i = 0; i < ops.length; ) {
    const group = grouped ? groupAt(ops, i) : [];
    if (group.length > 0) {
      const done = await runGroup(trx, nowMs, ctx.projectId, group);
      for (const [k, body] of done.bodies.entries()) {
        results.push({ index: (group[k] as Runnable).index, status: 200, replayed: false, body });
      }
      i += done.bodies.length;
      const notPlain = done.stoppedAtNotPlain ? group[done.bodies.length] : undefined;
      if (notPlain) {
        results.push(
          await step(notPlain, () => runOperation(trx, nowMs, notPlain, notPlain.write.general)),
        );
        i++;
      }
      continue;
    }
    const op = ops[i++] as Prepared;
    if ("error" in op) results.push(failed(op.index, op.error, ctx.logger));
    else results.push(await step(op, () => runOperation(trx, nowMs, op)));
  }
  return results;
}

/** The run of operations from `start` that `runPlainDebits` can make: unkeyed plain debits. */
function groupAt(ops: Prepared[], start: number): Runnable[] {
  const group: Runnable[] = [];
  for (const op of ops.slice(start, start + MAX_DEBITS_PER_CALL)) {
    if (!("write" in op) || op.keyed !== undefined || op.write.debitCall === undefined) break;
    group.push(op);
  }
  return group;
}

/** `runPlainDebits` of `group`, a failure of the statement turned into `Ungroup`. */
async function runGroup(trx: Transaction<DB>, nowMs: number, projectId: string, group: Runnable[]) {
  const calls = group.flatMap((op) => (op.write.debitCall ? [op.write.debitCall] : []));
  try {
    return await runPlainDebits(trx, nowMs, projectId, calls);
  } catch (error) {
    if (endsUnit(error)) throw error;
    throw new Ungroup();
  }
}

/** An atomic batch's step: a failure stops the unit (`BatchAborted`). */
async function atomicStep(
  op: Runnable,
  work: () => Promise<{ replayed: boolean; body: unknown }>,
): Promise<OperationResult> {
  try {
    return { index: op.index, status: 200, ...(await work()) };
  } catch (error) {
    if (endsUnit(error)) throw error;
    throw new BatchAborted(op.index, error);
  }
}

/**
 * An independent batch's step: in its own savepoint, so that a failure rolls back that
 * operation alone; or, without `mode.savepoints`, as it is, a failure ending the pass
 * (`NeedsSavepoints`).
 */
async function independentStep(
  trx: Transaction<DB>,
  op: Runnable,
  work: () => Promise<{ replayed: boolean; body: unknown }>,
  logger: Logger,
  mode: PassMode,
): Promise<OperationResult> {
  if (!mode.savepoints) {
    try {
      return { index: op.index, status: 200, ...(await work()) };
    } catch (error) {
      if (endsUnit(error)) throw error;
      throw new NeedsSavepoints();
    }
  }
  const outcome = await inSavepoint(trx, "batch_op", work);
  if (outcome.ok) return { index: op.index, status: 200, ...outcome.value };
  if (endsUnit(outcome.error)) throw outcome.error;
  return failed(op.index, outcome.error, logger);
}
