/**
 * Prometheus metrics (`GET /metrics`, prom-client). Each ledger has its own registry (tests run
 * several ledgers in one process), created by `openLedger` and handed to the app and the
 * scheduler through `AppDeps.metrics`.
 *
 * Labels are bounded: a route is the pattern it matched (`/v1/accounts/create`, `unmatched`
 * for a 404 of no route), never a raw URL; methods outside the HTTP set are `OTHER`.
 */
import { type Kysely, sql } from "kysely";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { DB, ReservationStatus } from "./db/schema.ts";
import type { BatchStats } from "./db/write-path.ts";

const RESERVATION_STATUSES: readonly ReservationStatus[] = [
  "pending",
  "confirmed",
  "cancelled",
  "expired",
];

/** Buckets of a scheduler job run's duration, in seconds. */
const JOB_SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30];

/** Buckets of a scheduled backup's duration, in seconds. */
const BACKUP_SECONDS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

const HTTP_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** Where the scrape-time gauges read from. */
export interface MetricsSources {
  /** Units waiting in the write queue. */
  queueDepth: () => number;
  /** Reservations per effective status (a pending hold past expiresAt counts as expired). */
  reservationsByStatus: () => Promise<Partial<Record<ReservationStatus, number>>>;
  /** Webhook deliveries still `pending` (in the whole database, every process's included). */
  webhookDeliveriesPending: () => Promise<number>;
}

/** The exports (docs/api.md#exports). */
export type ExportName = "transactions" | "usage";

/**
 * How an export ended: every row sent, the client gone before that (the reading stopped), or a
 * failure while reading (the response was cut short).
 */
export type ExportOutcome = "completed" | "cancelled" | "failed";

/** How one webhook attempt ended: `retried` when it failed and attempts remain. */
export type DeliveryOutcome = "delivered" | "retried" | "failed";

export interface Metrics {
  registry: Registry;
  /** Records one HTTP request (`route`: the matched pattern). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Records one write-queue transaction (the queue's `onBatch`). */
  observeBatch(stats: BatchStats): void;
  /** Makes a job's series exist (at 0) before its first run. */
  declareJob(job: string): void;
  /** Records one scheduler job run. */
  observeJob(job: string, ok: boolean, seconds: number, endedAtMs: number): void;
  /** Records the outcome of one webhook attempt. */
  observeWebhookDelivery(outcome: DeliveryOutcome): void;
  /** Records one scheduled backup (`bytes`: the finished file's size, on success). */
  observeBackup(ok: boolean, seconds: number, endedAtMs: number, bytes?: number): void;
  /** Records one page of `rows` rows read by an export (`name`: transactions or usage). */
  observeExportPage(name: ExportName, rows: number): void;
  /** Records how an export ended. */
  observeExportEnd(name: ExportName, outcome: ExportOutcome): void;
  /** The exposition text of every metric. */
  render(): Promise<string>;
  contentType: string;
}

export interface MetricsOptions extends Partial<MetricsSources> {
  /** Also export the process metrics of prom-client (CPU, memory, event loop); default true. */
  processMetrics?: boolean;
}

/** A registry with every instrument of the service. */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const observeRequest = httpSeries(registers);
  const observeBatch = writeSeries(registers, options.queueDepth);
  reservationGauge(registers, options.reservationsByStatus);
  const jobs = runSeries(registers, "ledger_job", ["job"], JOB_SECONDS, {
    runs: "Scheduler job runs, failed ones included",
    failures: "Scheduler job runs that failed",
    duration: "Duration of a scheduler job run",
    lastSuccess: "Unix time of the job's last successful run",
  });
  const observeBackup = backupSeries(registers);
  const observeWebhookDelivery = webhookSeries(registers, options.webhookDeliveriesPending);
  const exports = exportSeries(registers);
  return {
    registry,
    contentType: registry.contentType,
    observeRequest,
    observeBatch,
    declareJob(job) {
      jobs.declare({ job });
    },
    observeJob(job, ok, seconds, endedAtMs) {
      jobs.observe({ job }, ok, seconds, endedAtMs);
    },
    observeWebhookDelivery,
    observeBackup,
    ...exports,
    render: () => registry.metrics(),
  };
}

/**
 * `ledger_http_requests_total` and `ledger_http_request_duration_seconds`, by method, route
 * pattern and status. @returns `Metrics.observeRequest`
 */
function httpSeries(registers: Registry[]): Metrics["observeRequest"] {
  const labelNames = ["method", "route", "status"] as const;
  const httpRequests = new Counter({
    name: "ledger_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status",
    labelNames,
    registers,
  });
  const httpDuration = new Histogram({
    name: "ledger_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by method, route pattern and status",
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const requestSeries = new Map<
    string,
    { count: Counter.Internal; duration: Histogram.Internal<string> }
  >();
  return (method, route, status, seconds) => {
    // The label sets are few (route patterns × statuses): keep each one's children, so a
    // request does not hash its labels twice.
    const key = `${method} ${route} ${status}`;
    let series = requestSeries.get(key);
    if (!series) {
      const labels = {
        method: HTTP_METHODS.has(method) ? method : "OTHER",
        route,
        status: String(status),
      };
      series = { count: httpRequests.labels(labels), duration: httpDuration.labels(labels) };
      requestSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
  };
}

/**
 * The write path's series: the queue's depth (read at scrape time from `queueDepth`), each
 * transaction's duration and units, and the units that rolled back alone.
 * @returns `Metrics.observeBatch`
 */
function writeSeries(
  registers: Registry[],
  queueDepth: MetricsSources["queueDepth"] | undefined,
): Metrics["observeBatch"] {
  new Gauge({
    name: "ledger_write_queue_depth",
    help: "Write units waiting for a transaction (not counting the batch being committed)",
    registers,
    collect() {
      this.set(queueDepth ? queueDepth() : 0);
    },
  });
  const batchDuration = new Histogram({
    name: "ledger_write_batch_duration_seconds",
    help: "Duration of a write-queue transaction (BEGIN IMMEDIATE to COMMIT), by outcome",
    labelNames: ["outcome"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const batchUnits = new Histogram({
    name: "ledger_write_batch_units",
    help: "Write units committed together in one transaction",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers,
  });
  const failedUnits = new Counter({
    name: "ledger_write_units_failed_total",
    help: "Write units that threw and rolled back alone (402, 404, 409, …)",
    registers,
  });
  return (stats) => {
    const outcome = stats.committed ? "committed" : "failed";
    batchDuration.observe({ outcome }, stats.durationMs / 1000);
    batchUnits.observe(stats.units);
    if (stats.failedUnits > 0) failedUnits.inc(stats.failedUnits);
  };
}

/** `ledger_reservations` by effective status, read at scrape time from `reservationsByStatus`. */
function reservationGauge(
  registers: Registry[],
  reservationsByStatus: MetricsSources["reservationsByStatus"] | undefined,
): void {
  new Gauge({
    name: "ledger_reservations",
    help: "Reservations by effective status (a pending hold past expiresAt counts as expired)",
    labelNames: ["status"] as const,
    registers,
    async collect() {
      let counts: Partial<Record<ReservationStatus, number>>;
      try {
        counts = reservationsByStatus ? await reservationsByStatus() : {};
      } catch {
        // The database is unavailable (/ready says so): leave these out, keep the rest.
        this.reset();
        return;
      }
      for (const status of RESERVATION_STATUSES) this.set({ status }, counts[status] ?? 0);
    },
  });
}

/**
 * Webhook attempts by outcome (each outcome's series at 0 from the start), and the deliveries
 * pending, read at scrape time from `webhookDeliveriesPending`.
 * @returns `Metrics.observeWebhookDelivery`
 */
function webhookSeries(
  registers: Registry[],
  webhookDeliveriesPending: MetricsSources["webhookDeliveriesPending"] | undefined,
): Metrics["observeWebhookDelivery"] {
  const webhookDeliveries = new Counter({
    name: "ledger_webhook_deliveries_total",
    help: "Webhook attempts by outcome: delivered, retried (failed, attempts remain), failed (the last)",
    labelNames: ["outcome"] as const,
    registers,
  });
  for (const outcome of ["delivered", "retried", "failed"] as const) {
    webhookDeliveries.inc({ outcome }, 0);
  }
  new Gauge({
    name: "ledger_webhook_deliveries_pending",
    help: "Webhook deliveries waiting for an attempt or being attempted (every process's)",
    registers,
    async collect() {
      try {
        this.set(webhookDeliveriesPending ? await webhookDeliveriesPending() : 0);
      } catch {
        // The database is unavailable (/ready says so): leave this out, keep the rest.
        this.reset();
      }
    },
  });
  return (outcome) => webhookDeliveries.inc({ outcome });
}

/**
 * An export's series (docs/api.md#exports): keyset pages and rows read, by export, and how
 * exports ended (completed, cancelled: the client went away, failed).
 * @returns `Metrics.observeExportPage` and `Metrics.observeExportEnd`
 */
function exportSeries(
  registers: Registry[],
): Pick<Metrics, "observeExportPage" | "observeExportEnd"> {
  const exportPages = new Counter({
    name: "ledger_export_pages_total",
    help: "Keyset pages read from the database by exports, by export",
    labelNames: ["export"] as const,
    registers,
  });
  const exportRows = new Counter({
    name: "ledger_export_rows_total",
    help: "Rows read from the database by exports, by export",
    labelNames: ["export"] as const,
    registers,
  });
  const exportsEnded = new Counter({
    name: "ledger_exports_total",
    help: "Exports ended, by export and outcome: completed, cancelled (client gone), failed",
    labelNames: ["export", "outcome"] as const,
    registers,
  });
  return {
    observeExportPage(name, rows) {
      exportPages.inc({ export: name });
      exportRows.inc({ export: name }, rows);
    },
    observeExportEnd(name, outcome) {
      exportsEnded.inc({ export: name, outcome });
    },
  };
}

/**
 * A scheduled backup's series: runs, failures, duration and last success (`runSeries`), and the
 * size of the last file. @returns `Metrics.observeBackup`
 */
function backupSeries(registers: Registry[]): Metrics["observeBackup"] {
  const backups = runSeries(registers, "ledger_backup", [], BACKUP_SECONDS, {
    runs: "Scheduled backups attempted, failed ones included",
    failures: "Scheduled backups that failed (no file was written or removed)",
    duration: "Duration of a scheduled backup: copy, checks and placement",
    lastSuccess: "Unix time of the last successful scheduled backup (0: none yet)",
  });
  const backupBytes = new Gauge({
    name: "ledger_backup_size_bytes",
    help: "Size of the last successful scheduled backup",
    registers,
  });
  return (ok, seconds, endedAtMs, bytes) => {
    backups.observe({}, ok, seconds, endedAtMs);
    if (ok && bytes !== undefined) backupBytes.set(bytes);
  };
}

/** Label values of a series: each of the metric's label names (`L`) to its value. */
type Labels<L extends string> = Partial<Record<L, string | number>>;

/** The help texts of the series of a repeated task. */
interface RunHelp {
  runs: string;
  failures: string;
  duration: string;
  lastSuccess: string;
}

/**
 * The series of a repeated task (a scheduler job, a scheduled backup), each named after `prefix`
 * and labelled by `labelNames`: `<prefix>_runs_total` and `<prefix>_failures_total` (counters),
 * `<prefix>_duration_seconds` (a histogram of `buckets`, in seconds) and
 * `<prefix>_last_success_timestamp_seconds` (a gauge, Unix seconds; 0 until a run succeeds).
 */
function runSeries<L extends string>(
  registers: Registry[],
  prefix: string,
  labelNames: readonly L[],
  buckets: number[],
  help: RunHelp,
) {
  const series = { labelNames, registers };
  const runs = new Counter({ name: `${prefix}_runs_total`, help: help.runs, ...series });
  const failures = new Counter({
    name: `${prefix}_failures_total`,
    help: help.failures,
    ...series,
  });
  const duration = new Histogram({
    name: `${prefix}_duration_seconds`,
    help: help.duration,
    buckets,
    ...series,
  });
  const lastSuccess = new Gauge({
    name: `${prefix}_last_success_timestamp_seconds`,
    help: help.lastSuccess,
    ...series,
  });
  return {
    /** Makes the counters' series of `labels` exist, at 0, before the first run. */
    declare(labels: Labels<L>): void {
      runs.inc(labels, 0);
      failures.inc(labels, 0);
    },
    /** Records one run that took `seconds` and ended at `endedAtMs` (epoch ms). */
    observe(labels: Labels<L>, ok: boolean, seconds: number, endedAtMs: number): void {
      runs.inc(labels);
      duration.observe(labels, seconds);
      if (ok) lastSuccess.set(labels, endedAtMs / 1000);
      else failures.inc(labels);
    },
  };
}

/** Counts reservations per effective status at `nowMs`, over every project. */
export async function countReservationsByStatus(
  db: Kysely<DB>,
  nowMs: number,
): Promise<Partial<Record<ReservationStatus, number>>> {
  const effective = sql<ReservationStatus>`CASE WHEN status = 'pending' AND expires_at_ms <= ${nowMs} THEN 'expired' ELSE status END`;
  const rows = await db
    .selectFrom("reservations")
    .select([effective.as("status"), (eb) => eb.fn.countAll<number>().as("n")])
    // By position: PostgreSQL would not take the same CASE, with its own parameter, as the key.
    .groupBy(sql`1`)
    .execute();
  const out: Partial<Record<ReservationStatus, number>> = {};
  for (const row of rows) out[row.status] = Number(row.n);
  return out;
}

/** Counts webhook deliveries still pending, over every project. */
export async function countPendingDeliveries(db: Kysely<DB>): Promise<number> {
  const row = await db
    .selectFrom("webhook_deliveries")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("status", "=", "pending")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
