/**
 * Opens the whole ledger over a database: migrations applied, write queue, app dependencies.
 * Used by the server, every CLI command that touches the database, the scripts and the tests.
 */
import { resolve } from "node:path";
import { admissionFunctions } from "./admission/postgres.ts";
import type { Config } from "./config.ts";
import { checkpointWal, type WalCheckpoint } from "./db/checkpoint.ts";
import { type Database, filePathOf, openDatabase } from "./db/client.ts";
import { migrateToLatest } from "./db/migrator.ts";
import { isUnreachableAtStart, unreachableAtStart } from "./db/remote-libsql.ts";
import type { BatchStats, Clock, WriteQueue } from "./db/write-path.ts";
import { createWriteQueue } from "./db/write-queue.ts";
import type { AppDeps } from "./http/context.ts";
import { type Logger, silentLogger } from "./logger.ts";
import {
  countPendingDeliveries,
  countReservationsByStatus,
  createMetrics,
  type Metrics,
} from "./metrics.ts";
import type { ResolveHost } from "./resolve-host.ts";

export interface Ledger {
  db: Database;
  queue: WriteQueue;
  deps: AppDeps;
  /** Waits for queued writes, then closes the database. */
  close(): Promise<void>;
  /**
   * `close()` for the server's clean stop: on an embedded file it first folds the WAL into the
   * database file (src/db/checkpoint.ts), so that the file alone holds the whole ledger.
   * @returns the checkpoint's outcome; null when the database is not an embedded file
   *   (PostgreSQL, remote libSQL, in-memory)
   */
  closeCheckpointed(): Promise<WalCheckpoint | null>;
}

export interface LedgerOptions {
  clock?: Clock;
  logger?: Logger;
  onBatch?: (stats: BatchStats) => void;
  /** The ledger's metrics; by default a new registry of its own (`createMetrics`). */
  metrics?: Metrics;
  /** Resolves webhook hosts (default: the system's resolver); tests pass a stub. */
  resolveHost?: ResolveHost;
}

type LedgerConfig = Pick<
  Config,
  | "DATABASE_URL"
  | "DATABASE_AUTH_TOKEN"
  | "DATABASE_DRIVER"
  | "DATABASE_SYNCHRONOUS"
  | "DATABASE_POOL_MAX"
  | "WRITE_BATCH_MAX"
  | "RESERVATION_TTL_SECONDS"
  | "BODY_LIMIT_BYTES"
  | "WEBHOOK_ALLOW_PRIVATE"
  | "WEBHOOK_MAX_PER_PROJECT"
  | "STRIPE_API_URL"
>;

/** Opens the database named by `config`, applies pending migrations and builds the deps. */
export async function openLedger(
  config: LedgerConfig,
  options: LedgerOptions = {},
): Promise<Ledger> {
  const db = await openDatabase({
    url: config.DATABASE_URL,
    authToken: config.DATABASE_AUTH_TOKEN,
    driver: config.DATABASE_DRIVER,
    synchronous: config.DATABASE_SYNCHRONOUS,
    poolMax: config.DATABASE_POOL_MAX,
    onIdleError: (err) =>
      options.logger?.warn({ err: err.message }, "database connection lost while idle"),
  });
  try {
    await migrateToLatest(db.write, undefined, admissionFunctions());
  } catch (err) {
    await db.close().catch(() => undefined);
    throw isUnreachableAtStart(err) ? unreachableAtStart(config.DATABASE_URL, err) : err;
  }
  const clock = options.clock ?? Date.now;
  const metrics =
    options.metrics ??
    createMetrics({
      queueDepth: () => queue.depth,
      reservationsByStatus: () => countReservationsByStatus(db.read, clock()),
      webhookDeliveriesPending: () => countPendingDeliveries(db.read),
    });
  const onBatch = options.onBatch;
  const queue = createWriteQueue(db, clock, {
    maxBatch: config.WRITE_BATCH_MAX,
    onBatch: (stats) => {
      metrics.observeBatch(stats);
      onBatch?.(stats);
    },
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const deps: AppDeps = {
    db,
    queue,
    config,
    clock,
    logger: options.logger ?? silentLogger,
    metrics,
    ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
  };
  const closeLedger = async (checkpoint: boolean) => {
    queue.health.stop();
    await queue.idle();
    const file = checkpoint ? embeddedFile(config.DATABASE_URL) : null;
    try {
      return file === null ? null : await checkpointWal(db.write, file);
    } finally {
      await db.close();
    }
  };
  return {
    db,
    queue,
    deps,
    close: async () => {
      await closeLedger(false);
    },
    closeCheckpointed: () => closeLedger(true),
  };
}

/** The absolute path of the embedded SQLite file `url` names; null for any other database. */
function embeddedFile(url: string): string | null {
  const path = filePathOf(url);
  return path === null || path === ":memory:" ? null : resolve(path);
}
