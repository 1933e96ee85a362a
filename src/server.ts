/**
 * `ledger serve`: config → database (migrated) → bootstrap → app → HTTP server; the scheduler;
 * scheduled backups when BACKUP_DIR is set; the webhook delivery worker; SIGTERM/SIGINT: stop
 * accepting, finish requests in flight and a backup in progress, stop the scheduler and the
 * webhook worker, close the database, all within SHUTDOWN_TIMEOUT_SECONDS.
 */
import { createApp } from "./app.ts";
import { startConfiguredBackups } from "./backup/scheduled.ts";
import { bootstrapProject } from "./bootstrap.ts";
import type { Config } from "./config.ts";
import { runtimeDescription, serveHttp } from "./http/serve.ts";
import { startScheduler } from "./jobs/scheduler.ts";
import { createLogger } from "./logger.ts";
import { seedModelsIfEmpty } from "./models/seed.ts";
import { openLedger } from "./runtime.ts";
import { startDeliveryWorker } from "./webhooks/delivery.ts";

export interface RunningServer {
  port: number;
  /** Graceful stop (the SIGTERM path). */
  stop(): Promise<void>;
}

/** Starts the service. Prints the bootstrap API key on a fresh database. */
export async function startServer(config: Config): Promise<RunningServer> {
  const logger = createLogger(config.LOG_LEVEL);
  const ledger = await openLedger(config, { logger });
  const boot = await bootstrapProject(
    ledger.db.read,
    ledger.queue,
    config.LEDGER_BOOTSTRAP_API_KEY,
  );
  if (boot) {
    // The one place a key is printed: plain text for the operator, never a JSON log line, and
    // not at all when the operator chose the key.
    process.stdout.write(
      config.LEDGER_BOOTSTRAP_API_KEY
        ? `\nCreated project "default" (${boot.projectId}) with the key of LEDGER_BOOTSTRAP_API_KEY.\n\n`
        : `\nCreated project "default" (${boot.projectId}). Its API key, shown only this once:\n\n  ${boot.apiKey}\n\n`,
    );
  }
  const seeded = await seedModelsIfEmpty(ledger.db.read, ledger.queue);
  if (seeded > 0) logger.info({ models: seeded }, "model catalog seeded");
  const app = createApp(ledger.deps);
  const scheduler = config.SCHEDULER_ENABLED
    ? startScheduler({
        queue: ledger.queue,
        clock: ledger.deps.clock,
        logger,
        expireCron: config.EXPIRE_CRON,
        grantCron: config.GRANT_CRON,
        retentionCron: config.RETENTION_CRON,
        webhookRetentionDays: config.WEBHOOK_RETENTION_DAYS,
        metrics: ledger.deps.metrics,
      })
    : undefined;
  const backups = startConfiguredBackups(config, { logger, metrics: ledger.deps.metrics });
  const webhooks = startDeliveryWorker({
    db: ledger.db,
    queue: ledger.queue,
    clock: ledger.deps.clock,
    logger,
    metrics: ledger.deps.metrics,
    retrySeconds: config.WEBHOOK_RETRY_SECONDS,
    timeoutSeconds: config.WEBHOOK_TIMEOUT_SECONDS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    pollMs: config.WEBHOOK_POLL_MS,
    targets: { allowPrivate: config.WEBHOOK_ALLOW_PRIVATE },
  });
  const server = await serveHttp({
    fetch: app.fetch,
    port: config.PORT,
    hostname: config.HOST,
  }).catch(async (err: unknown) => {
    scheduler?.stop();
    await webhooks.stop();
    await backups?.stop();
    await ledger.close();
    throw err;
  });
  const { port } = server;
  logger.info(
    { port, runtime: runtimeDescription(), database: redactUrl(config.DATABASE_URL) },
    "listening",
  );
  process.stdout.write(`Credit ledger listening on http://localhost:${port}\n`);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      logger.info({}, "shutting down");
      scheduler?.stop();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, config.SHUTDOWN_TIMEOUT_SECONDS * 1000);
      });
      await Promise.race([Promise.all([server.close(), backups?.stop()]), timeout]);
      clearTimeout(timer);
      // Attempts on the wire are aborted and their deliveries handed back before the database
      // closes; a delivery whose hand-back is lost is attempted again once its lease runs out.
      await webhooks.stop();
      await ledger.close();
    })();
    return stopping;
  };
  return { port, stop };
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}
