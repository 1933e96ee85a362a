/**
 * Scheduled backups of the embedded database (`BACKUP_DIR`, `BACKUP_CRON`, `BACKUP_KEEP`): each
 * run writes `ledger-<UTC timestamp>.db` in `BACKUP_DIR` through `writeBackup` (temporary name,
 * checks, then its name) and keeps the newest `BACKUP_KEEP`. The oldest are removed only once the
 * new copy has passed its checks, and just enough of them that, when it takes its name, no more
 * than `BACKUP_KEEP` finished backups exist. A failed run is logged and counted, and removes
 * nothing.
 */
import { readdir, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Cron } from "croner";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Metrics } from "../metrics.ts";
import { type BackupResult, embeddedDatabasePath, writeBackup } from "./backup.ts";
import { fsyncPath, utcStamp } from "./sqlite-file.ts";

/** The name of a finished scheduled backup. */
export const BACKUP_NAME = /^ledger-\d{8}T\d{6}Z\.db$/;

export interface BackupScheduleOptions {
  /** The database file to back up. */
  databasePath: string;
  dir: string;
  /** croner pattern, with a seconds field. */
  cron: string;
  keep: number;
  logger: Logger;
  metrics?: Metrics;
  clock?: () => number;
}

export interface BackupSchedule {
  /** Stops the schedule; resolves once a backup in progress has finished (and cleaned up). */
  stop(): Promise<void>;
  /** Runs one backup now. @returns the backup, or null when it failed (logged and counted) */
  runNow(): Promise<BackupResult | null>;
}

/** The finished backups in `dir`, oldest first (their names sort by time). */
export async function listBackups(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => []);
  return names.filter((name) => BACKUP_NAME.test(name)).sort();
}

/**
 * One scheduled backup at `nowMs` into `dir` (created when missing), then pruning to `keep`.
 * @throws BackupError or a file-system/SQLite Error when it failed; nothing was removed then
 */
export async function runScheduledBackup(
  options: Pick<BackupScheduleOptions, "databasePath" | "dir" | "keep">,
  nowMs: number,
): Promise<BackupResult> {
  const dir = resolve(options.dir);
  const file = join(dir, `ledger-${utcStamp(nowMs)}.db`);
  return writeBackup(options.databasePath, file, nowMs, {
    beforePlace: async () => {
      const finished = await listBackups(dir);
      const excess = finished.length - (options.keep - 1);
      for (const name of finished.slice(0, Math.max(0, excess))) await unlink(join(dir, name));
      if (excess > 0) await fsyncPath(dir);
    },
  });
}

/** Starts the schedule. Runs never overlap; each is logged and, with `metrics`, counted. */
export function startBackupSchedule(options: BackupScheduleOptions): BackupSchedule {
  const clock = options.clock ?? Date.now;
  let running: Promise<BackupResult | null> | undefined;
  const run = (nowMs: number): Promise<BackupResult | null> => {
    running ??= once(nowMs).finally(() => {
      running = undefined;
    });
    return running;
  };
  const once = async (nowMs: number): Promise<BackupResult | null> => {
    const started = performance.now();
    try {
      const result = await runScheduledBackup(options, nowMs);
      const seconds = (performance.now() - started) / 1000;
      options.metrics?.observeBackup(true, seconds, Date.now(), result.bytes);
      if (result.removedLeftovers.length > 0) {
        options.logger.info(
          { dir: options.dir, files: result.removedLeftovers },
          "leftovers of killed backups removed",
        );
      }
      options.logger.info(
        { backup: result.file, bytes: result.bytes, durationMs: Math.round(seconds * 1000) },
        "backup written",
      );
      return result;
    } catch (err) {
      options.metrics?.observeBackup(false, (performance.now() - started) / 1000, Date.now());
      options.logger.error(
        { dir: options.dir, err: err instanceof Error ? err.message : String(err) },
        "backup failed",
      );
      return null;
    }
  };
  // Names have one-second resolution: a run is named after the second it was scheduled for
  // (croner may fire a few milliseconds either side of it).
  const cron = new Cron(options.cron, { protect: true, timezone: "UTC" }, async () => {
    await run(Math.round(clock() / 1000) * 1000);
  });
  return {
    stop: async () => {
      cron.stop();
      await running;
    },
    runNow: () => run(clock()),
  };
}

/**
 * Starts the backups `config` asks for: none without `BACKUP_DIR`; on a database that is not a
 * local file, a warning and none (its backups are the database's own).
 */
export function startConfiguredBackups(
  config: Pick<Config, "DATABASE_URL" | "BACKUP_DIR" | "BACKUP_CRON" | "BACKUP_KEEP">,
  deps: { logger: Logger; metrics?: Metrics },
): BackupSchedule | undefined {
  if (!config.BACKUP_DIR) return undefined;
  let databasePath: string;
  try {
    databasePath = embeddedDatabasePath(config.DATABASE_URL);
  } catch (err) {
    deps.logger.warn(
      { err: err instanceof Error ? err.message : String(err) },
      "BACKUP_DIR ignored",
    );
    return undefined;
  }
  return startBackupSchedule({
    databasePath,
    dir: config.BACKUP_DIR,
    cron: config.BACKUP_CRON,
    keep: config.BACKUP_KEEP,
    logger: deps.logger,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
}
