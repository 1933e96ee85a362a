/**
 * The in-process schedule (croner): the reservation sweeper, the plan grant job, and the purge of
 * stored idempotent responses older than 24 hours. `protect` keeps a run from overlapping the
 * previous one; every job writes through the serial write queue.
 */
import { Cron } from "croner";
import type { WriteQueue } from "../db/write-queue.ts";
import type { Logger } from "../http/context.ts";
import { purgeIdempotencyKeys } from "../http/idempotency.ts";
import { runExpireReservations } from "./expire-reservations.ts";
import { runGrantPlans } from "./grant-plans.ts";

export interface SchedulerOptions {
  queue: WriteQueue;
  clock: () => number;
  logger: Logger;
  expireCron: string;
  grantCron: string;
  /** Called after each run (for metrics). */
  onRun?: (job: string, ok: boolean) => void;
}

export interface Scheduler {
  stop(): void;
}

/** Starts the jobs. @returns a handle whose `stop()` ends them */
export function startScheduler(opts: SchedulerOptions): Scheduler {
  const job = (name: string, pattern: string, run: (nowMs: number) => Promise<unknown>) =>
    new Cron(pattern, { protect: true, timezone: "UTC" }, async () => {
      try {
        const result = await run(opts.clock());
        opts.onRun?.(name, true);
        opts.logger.info({ job: name, result }, "job run");
      } catch (err) {
        opts.onRun?.(name, false);
        opts.logger.error({ job: name, err: (err as Error).message }, "job failed");
      }
    });
  const jobs = [
    job("expire-reservations", opts.expireCron, (nowMs) =>
      runExpireReservations({ queue: opts.queue, nowMs }),
    ),
    job("grant-plans", opts.grantCron, (nowMs) => runGrantPlans({ queue: opts.queue, nowMs })),
    job("purge-idempotency-keys", "0 17 * * * *", (nowMs) =>
      opts.queue.run((trx) => purgeIdempotencyKeys(trx, nowMs)),
    ),
  ];
  return {
    stop: () => {
      for (const j of jobs) j.stop();
    },
  };
}
