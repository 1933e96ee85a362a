/**
 * `ledger serve`: config → database (migrated) → bootstrap → app → HTTP server; the scheduler;
 * scheduled backups when BACKUP_DIR is set; the webhook delivery worker; SIGTERM/SIGINT: stop
 * accepting, finish requests in flight and a backup in progress, stop the scheduler and the
 * webhook worker, fold an embedded file's WAL into it and close the database, all within
 * SHUTDOWN_TIMEOUT_SECONDS; the last log line says it stopped.
 */
import { basename } from "node:path";
import { createApp } from "./app.ts";
import { type BackupSchedule, startConfiguredBackups } from "./backup/scheduled.ts";
import { bootstrapProject } from "./bootstrap.ts";
import type { Config } from "./config.ts";
import type { WalCheckpoint } from "./db/checkpoint.ts";
import { type HttpServer, runtimeDescription, serveHttp } from "./http/serve.ts";
import { type AutoTopupWorker, startAutoTopupWorker } from "./jobs/auto-topup.ts";
import { type JobLogger, type Scheduler, startScheduler } from "./jobs/scheduler.ts";
import { createLogger, type Logger } from "./logger.ts";
import { seedModelsIfEmpty } from "./models/seed.ts";
import { type Ledger, openLedger } from "./runtime.ts";
import { type DeliveryWorker, startDeliveryWorker } from "./webhooks/delivery.ts";

export interface RunningServer {
  port: number;
  /** Graceful stop (the SIGTERM path). */
  stop(): Promise<void>;
}

/** Starts the service. Prints the bootstrap API key on a fresh database. */
export async function startServer(config: Config): Promise<RunningServer> {
  const logger = createLogger(config.LOG_LEVEL);
  const ledger = await openLedger(config, { logger });
  await firstStart(ledger, config, logger);
  const app = createApp(ledger.deps);
  const background = startBackground(ledger, config, logger);
  const server = await serveHttp({
    fetch: app.fetch,
    port: config.PORT,
    hostname: config.HOST,
  }).catch(async (err: unknown) => {
    background.scheduler?.stop();
    await background.webhooks.stop();
    await background.topUps.stop();
    await background.backups?.stop();
    await ledger.close();
    throw err;
  });
  const { port } = server;
  const urls = listenUrls(server.address, port);
  // From here on standard output carries JSON lines only; the operator's line goes to stderr.
  logger.info(
    {
      address: server.address,
      port,
      ...urls,
      runtime: runtimeDescription(),
      database: redactUrl(config.DATABASE_URL),
    },
    "listening",
  );
  process.stderr.write(
    `Credit ledger listening on ${urls.url} (console: ${urls.console}, docs: ${urls.docs})\n`,
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= stopGracefully({ server, background, ledger, config, logger });
    return stopping;
  };
  return { port, stop };
}

/**
 * The URLs of a server bound to `address`:`port`: `url` names the address as bound
 * (`http://0.0.0.0:3000`: every interface, not only localhost); the console and docs URLs use
 * the loopback address of the same family when the address is a wildcard, since a browser on
 * this machine cannot open a wildcard address everywhere.
 */
export function listenUrls(address: string, port: number) {
  const host = (a: string) => (a.includes(":") ? `[${a}]` : a);
  const url = `http://${host(address)}:${port}`;
  const wildcard = address === "0.0.0.0" || address === "::";
  const local = wildcard ? `http://${address === "::" ? "[::1]" : "127.0.0.1"}:${port}` : url;
  return { url, console: `${local}/console`, docs: `${local}/docs` };
}

/**
 * On a fresh database: the `default` project and its key (printed once), and the shipped model
 * catalog when the catalog is empty.
 */
async function firstStart(ledger: Ledger, config: Config, logger: Logger): Promise<void> {
  const chosenKey = config.LEDGER_BOOTSTRAP_API_KEY;
  const boot = await bootstrapProject(ledger.db.read, ledger.queue, chosenKey);
  if (boot) {
    // The one place a key is printed: plain text for the operator, never a JSON log line, and
    // not at all when the operator chose the key.
    process.stdout.write(
      chosenKey
        ? `\nCreated project "default" (${boot.projectId}) with the key of LEDGER_BOOTSTRAP_API_KEY.\n\n`
        : `\nCreated project "default" (${boot.projectId}). Its API key, shown only this once:\n\n  ${boot.apiKey}\n\n`,
    );
  }
  const seeded = await seedModelsIfEmpty(ledger.db.read, ledger.queue);
  if (seeded > 0) logger.info({ models: seeded }, "model catalog seeded");
}

/** What a server runs beside answering requests. */
interface Background {
  /** The job scheduler, unless SCHEDULER_ENABLED=false. */
  scheduler: Scheduler | undefined;
  /** Scheduled backups, when BACKUP_DIR is set. */
  backups: BackupSchedule | undefined;
  webhooks: DeliveryWorker;
  /** The automatic top-up worker (docs/api.md#automatic-top-up). */
  topUps: AutoTopupWorker;
}

/** Starts the scheduler, the scheduled backups and the webhook delivery worker, as configured. */
function startBackground(ledger: Ledger, config: Config, logger: JobLogger): Background {
  const { clock, metrics } = ledger.deps;
  const scheduler = config.SCHEDULER_ENABLED
    ? startScheduler({
        queue: ledger.queue,
        clock,
        logger,
        expireCron: config.EXPIRE_CRON,
        grantCron: config.GRANT_CRON,
        retentionCron: config.RETENTION_CRON,
        webhookRetentionDays: config.WEBHOOK_RETENTION_DAYS,
        metrics,
      })
    : undefined;
  const backups = startConfiguredBackups(config, { logger, metrics });
  const webhooks = startDeliveryWorker({
    db: ledger.db,
    queue: ledger.queue,
    clock,
    logger,
    metrics,
    retrySeconds: config.WEBHOOK_RETRY_SECONDS,
    timeoutSeconds: config.WEBHOOK_TIMEOUT_SECONDS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    pollMs: config.WEBHOOK_POLL_MS,
    targets: { allowPrivate: config.WEBHOOK_ALLOW_PRIVATE },
  });
  const topUps = startAutoTopupWorker({
    db: ledger.db,
    queue: ledger.queue,
    clock,
    logger,
    pollMs: config.AUTO_TOPUP_POLL_MS,
    leaseSeconds: config.AUTO_TOPUP_LEASE_SECONDS,
    apiUrl: config.STRIPE_API_URL,
  });
  return { scheduler, backups, webhooks, topUps };
}

/**
 * The graceful stop (SIGTERM, SIGINT): the scheduler first; then the HTTP server (requests in
 * flight answer) and a backup in progress, for at most SHUTDOWN_TIMEOUT_SECONDS; then the
 * webhook worker; then the WAL checkpoint and the database; then the last log line, "stopped".
 */
async function stopGracefully(running: {
  server: HttpServer;
  background: Background;
  ledger: Ledger;
  config: Config;
  logger: Logger;
}): Promise<void> {
  const { server, background, ledger, config, logger } = running;
  logger.info({}, "shutting down");
  background.scheduler?.stop();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, config.SHUTDOWN_TIMEOUT_SECONDS * 1000);
  });
  await Promise.race([Promise.all([server.close(), background.backups?.stop()]), timeout]);
  clearTimeout(timer);
  // Attempts on the wire are aborted and their deliveries handed back before the database
  // closes; a delivery whose hand-back is lost is attempted again once its lease runs out.
  await background.webhooks.stop();
  await background.topUps.stop();
  // Every writer has stopped: the WAL is folded into the database file before it closes, so
  // that a copy of the file alone after the stop holds every write.
  const checkpoint = await ledger.closeCheckpointed();
  logStopped(logger, checkpoint);
}

/**
 * The last line of a clean stop: that the service stopped and, on an embedded file, whether the
 * database file alone is complete (docs/operations.md, "Stopping").
 */
function logStopped(logger: Logger, checkpoint: WalCheckpoint | null): void {
  if (checkpoint === null) {
    logger.info({}, "stopped");
  } else if (checkpoint.complete) {
    logger.info({ database: checkpoint.file }, `stopped; ${basename(checkpoint.file)} is complete`);
  } else {
    const name = basename(checkpoint.file);
    logger.warn(
      { database: checkpoint.file, ...(checkpoint.error ? { err: checkpoint.error } : {}) },
      `stopped; ${name}-wal still holds writes that ${name} lacks: copy the two together`,
    );
  }
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}
