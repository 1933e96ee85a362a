/**
 * The operations of a batch in order, inside its unit (docs/design.md#batches): each run as its
 * route would with its key, and what a failure does in each mode: an atomic batch stops
 * (`BatchAborted`), an independent one's first pass starts again with savepoints
 * (`NeedsSavepoints`) or, with them, answers the failure. A run of plain debits is made
 * together (plain-debits.ts: on SQLite one balance move per account, on PostgreSQL one round
 * trip); a group that fails as a statement starts the pass again without grouping (`Ungroup`).
 */
import type { Transaction } from "kysely";
import { isRetryableConflict, isUnavailable } from "../db/postgres.ts";
import { inSavepoint } from "../db/savepoint.ts";
import type { DB } from "../db/schema.ts";
import { isStorageFailure } from "../db/storage-errors.ts";
import type { WriteUnit } from "../db/write-path.ts";
import { ApiError } from "../errors.ts";
import type { PreparedWrite } from "../http/handlers.ts";
import { findStored, type KeyedRequest, storeAnswer } from "../http/idempotency.ts";
import { parseJsonVerbatim, stringifyJson } from "../json.ts";
import type { Logger } from "../logger.ts";
import { MAX_DEBITS_PER_CALL, runPlainDebits } from "./plain-debits.ts";

/** One operation's answer: the route's own status and body. */
export interface OperationResult {
  index: number;
  status: number;
  replayed: boolean;
  body: unknown;
}

/** An operation ready to run: its route's unit, or the error that stops it before it runs. */
export type Prepared =
  | { index: number; write: PreparedWrite; keyed: KeyedRequest | undefined; refs: string[] }
  | { index: number; error: unknown };

/** An operation its route accepted. */
export type Runnable = Extract<Prepared, { write: unknown }>;

/** Runs one operation in `trx` as its route would with its key (docs/api.md#idempotency). */
export async function runOperation(
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
export function endsUnit(error: unknown): boolean {
  return isStorageFailure(error) || isRetryableConflict(error) || isUnavailable(error);
}

/** The result of an operation that failed with `error`, as the route alone would answer it. */
export function failed(index: number, error: unknown, logger: Logger): OperationResult {
  if (error instanceof ApiError) {
    return { index, status: error.status, replayed: false, body: error.toBody() };
  }
  const { name, message } = error instanceof Error ? error : { name: "unknown", message: "" };
  logger.error({ route: "/v1/batch", index, err: { name, message } }, "unhandled error");
  const internal = new ApiError("INTERNAL_ERROR", "An unexpected error occurred");
  return { index, status: internal.status, replayed: false, body: internal.toBody() };
}

/** Thrown out of an atomic batch's unit so that it rolls back: the operation that failed. */
export class BatchAborted extends Error {
  constructor(
    readonly failedIndex: number,
    readonly error: unknown,
  ) {
    super("batch aborted");
  }
}

/**
 * Thrown out of an independent batch's first pass, which runs without savepoints, when an
 * operation fails: that pass rolls back whole and the batch runs again with a savepoint per
 * operation.
 */
export class NeedsSavepoints extends Error {}

/**
 * Thrown out of a pass whose grouped plain debits (plain-debits.ts) failed as a statement: which
 * operation failed is unknown, so the pass rolls back whole and runs again without grouping.
 */
export class Ungroup extends Error {}

/** How a pass runs: a savepoint per operation, plain debits grouped (plain-debits.ts). */
export interface PassMode {
  savepoints: boolean;
  grouped: boolean;
}

/** Runs one operation's `work` and answers its result, or throws as its mode does. */
export type Step = (
  op: Runnable,
  work: () => Promise<{ replayed: boolean; body: unknown }>,
) => Promise<OperationResult>;

/** What an operation its route refused before running answers, in its place of the order. */
export type Refused = (op: Extract<Prepared, { error: unknown }>) => OperationResult;

/** An independent batch's refused operation: its own failed result, the others go on. */
export const refusedAlone =
  (logger: Logger): Refused =>
  (op) =>
    failed(op.index, op.error, logger);

/**
 * An atomic batch's refused operation: it stops the unit where array order reaches it, so an
 * earlier operation that fails is the batch's failure (docs/api.md#batches).
 * @throws BatchAborted always
 */
export const refusedAtomic: Refused = (op) => {
  throw new BatchAborted(op.index, op.error);
};

/**
 * Runs the operations in order with `step`; with `mode.grouped`, each run of consecutive plain
 * debits without a key together (plain-debits.ts), the first that is not plain on its
 * general path through `step`. An operation refused before running answers `refused` in its
 * place of the order.
 * @throws Ungroup when a group fails as a statement (unless that failure ends the unit)
 */
export async function runInOrder(
  on: { trx: Transaction<DB>; nowMs: number; projectId: string },
  ops: Prepared[],
  grouped: boolean,
  step: Step,
  refused: Refused,
): Promise<OperationResult[]> {
  const { trx, nowMs, projectId } = on;
  const results: OperationResult[] = [];
  for (let i = 0; i < ops.length; ) {
    const group = grouped ? groupAt(ops, i) : [];
    if (group.length > 0) {
      const done = await runGroup(trx, nowMs, projectId, group);
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
    if ("error" in op) results.push(refused(op));
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
export async function atomicStep(
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
export async function independentStep(
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
