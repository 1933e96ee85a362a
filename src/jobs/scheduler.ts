/**
 * The in-process schedule (croner): the reservation sweeper and the grant expiry job (both on
 * `EXPIRE_CRON`), the plan grant job, the purge of stored idempotent responses older than
 * 24 hours, and the retention of webhook data (`RETENTION_CRON`). `protect` keeps a run from overlapping the
 * previous one; every job writes through the serial write queue. Each run is logged (at `debug`
 * when it found nothing to do, so an idle service's log stays quiet; at `info` when it changed
 * something; at `error` when it failed) and, with `metrics`, counted (`ledger_job_runs_total`,
 * `ledger_job_failures_total`, …). A job that keeps failing with the same error (a full disk
 * fails it every few seconds) logs it once, at `error`; the repeats go to `debug`, and the
 * first run that succeeds again (once the database writes again, for a failure to write) logs
 * `job recovered` with the number of failed runs (docs/operations.md, "Logs").
 */
import { Cron } from "croner";
import { CannotWriteError, describeDatabaseError } from "../db/storage-errors.ts";
import type { UnitRunner } from "../db/write-path.ts";
import { purgeIdempotencyKeys } from "../http/idempotency.ts";
import type { Logger } from "../logger.ts";
import type { Metrics } from "../metrics.ts";
import { runExpireGrants } from "./expire-grants.ts";
import { runExpireReservations } from "./expire-reservations.ts";
import { runGrantPlans } from "./grant-plans.ts";
import { runPurgeWebhooks } from "./purge-webhooks.ts";

/** The scheduler's logger: the app's, with pino's `debug` when it has one. */
export type JobLogger = Logger & { debug?: (obj: object, msg?: string) => void };

export interface SchedulerOptions {
  queue: UnitRunner;
  clock: () => number;
  logger: JobLogger;
  expireCron: string;
  grantCron: string;
  /** RETENTION_CRON: when the retention of webhook data runs. */
  retentionCron: string;
  /** WEBHOOK_RETENTION_DAYS: how long ended webhook deliveries are kept. */
  webhookRetentionDays: number;
  /** The ledger's metrics (`ledger.deps.metrics`): runs, failures and durations per job. */
  metrics?: Metrics;
  /** Called after each run. */
  onRun?: (job: string, ok: boolean) => void;
}

export type JobName =
  | "expire-reservations"
  | "expire-grants"
  | "grant-plans"
  | "purge-idempotency-keys"
  | "purge-webhooks";

export interface Scheduler {
  stop(): void;
  /** Runs a job now, outside its schedule (recorded like a scheduled run). */
  runNow(job: JobName): Promise<void>;
}

/**
 * Whether a job's result says it changed nothing: 0, nothing, an empty list, or an object whose
 * counts are all 0 (`{ grants: 0, completed: 0, failed: 0 }`).
 */
export function didNothing(result: unknown): boolean {
  if (result === undefined || result === null || result === 0) return true;
  if (Array.isArray(result)) return result.length === 0;
  if (typeof result === "object") return Object.values(result).every((v) => didNothing(v));
  return false;
}

/** Starts the jobs. @returns a handle whose `stop()` ends them */
export function startScheduler(opts: SchedulerOptions): Scheduler {
  const runs: Record<JobName, (nowMs: number) => Promise<unknown>> = {
    "expire-reservations": (nowMs) => runExpireReservations({ queue: opts.queue, nowMs }),
    "expire-grants": (nowMs) => runExpireGrants({ queue: opts.queue, nowMs }),
    "grant-plans": (nowMs) => runGrantPlans({ queue: opts.queue, nowMs }),
    "purge-idempotency-keys": (nowMs) => opts.queue.run((trx) => purgeIdempotencyKeys(trx, nowMs)),
    "purge-webhooks": (nowMs) =>
      runPurgeWebhooks({ queue: opts.queue, nowMs, retentionDays: opts.webhookRetentionDays }),
  };

  /**
   * Per job, its failed runs since it last logged a success, and the kind of error it logged.
   * A database that cannot write is one kind for as long as the write path's episode lasts
   * (src/db/write-health.ts): a job with nothing to write may succeed meanwhile, which proves
   * nothing, so it neither ends the job's episode nor is logged as a recovery.
   */
  const failing = new Map<JobName, { runs: number; kind: string; cannotWrite: boolean }>();
  const writeEpisode = () => opts.queue.health?.failure?.sinceMs;

  /** One run of `name`: never throws; logs and records the outcome. */
  const runJob = async (name: JobName): Promise<void> => {
    const started = performance.now();
    let ok = true;
    try {
      const result = await runs[name](opts.clock());
      const failed = failing.get(name);
      if (failed && !(failed.cannotWrite && writeEpisode() !== undefined)) {
        failing.delete(name);
        opts.logger.info({ job: name, failedRuns: failed.runs }, "job recovered");
      }
      if (didNothing(result)) opts.logger.debug?.({ job: name, result }, "job run");
      else opts.logger.info({ job: name, result }, "job run");
    } catch (err) {
      ok = false;
      const text = errorText(err);
      const cannotWrite = err instanceof CannotWriteError;
      // Every failure to write in one episode is one kind, whichever table could not grow.
      const kind = cannotWrite ? `cannot write since ${writeEpisode() ?? 0}` : text;
      const failed = failing.get(name);
      if (failed?.kind === kind) {
        failed.runs++;
        opts.logger.debug?.({ job: name, err: text, failedRuns: failed.runs }, "job failed");
      } else {
        failing.set(name, { runs: (failed?.runs ?? 0) + 1, kind, cannotWrite });
        opts.logger.error({ job: name, err: text }, "job failed");
      }
    }
    opts.metrics?.observeJob(name, ok, (performance.now() - started) / 1000, Date.now());
    opts.onRun?.(name, ok);
  };

  const schedule: [JobName, string][] = [
    ["expire-reservations", opts.expireCron],
    ["expire-grants", opts.expireCron],
    ["grant-plans", opts.grantCron],
    ["purge-idempotency-keys", "0 17 * * * *"],
    ["purge-webhooks", opts.retentionCron],
  ];
  const jobs = schedule.map(([name, pattern]) => {
    opts.metrics?.declareJob(name);
    return new Cron(pattern, { protect: true, timezone: "UTC" }, () => runJob(name));
  });
  return {
    stop: () => {
      for (const j of jobs) j.stop();
    },
    runNow: runJob,
  };
}

/** A job's error for the log: the database's own error behind a 503, else the message. */
function errorText(err: unknown): string {
  if (err instanceof CannotWriteError) return describeDatabaseError(err);
  return err instanceof Error ? err.message : String(err);
}
