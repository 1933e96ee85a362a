/**
 * The service's configuration, parsed once from the environment with zod.
 * Nothing else in the codebase reads `process.env`; everything receives a `Config`.
 */
import { z } from "zod";

/** Longest delay between two attempts of a webhook delivery: 30 days, in seconds. */
const MAX_RETRY_DELAY_SECONDS = 30 * 86_400;

/**
 * A comma-separated list of 0–20 delays in seconds, each finite, > 0 and at most 30 days
 * (`5,30,120`, `0.2,0.2`; an empty value: no retries).
 */
const retrySeconds = z.string().transform((text, ctx) => {
  const parts = text.trim() === "" ? [] : text.split(",").map((p) => p.trim());
  const delays = parts.map((p) => (p === "" ? Number.NaN : Number(p)));
  const fine = delays.every((d) => d > 0 && d <= MAX_RETRY_DELAY_SECONDS);
  if (!fine || delays.length > 20) {
    ctx.addIssue({
      code: "custom",
      message: "must be at most 20 comma-separated delays in seconds, each > 0 and ≤ 30 days",
    });
    return z.NEVER;
  }
  return delays;
});

/** Longest retention of webhook data: 100 years, in days. */
const MAX_RETENTION_DAYS = 36_500;

/** A positive decimal number of days (`30`, `0.5`; not `0`, `-1`, `1e3` or `30d`). */
const retentionDays = z.string().transform((text, ctx) => {
  const days = /^(\d+(\.\d+)?|\.\d+)$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!(days > 0) || days > MAX_RETENTION_DAYS) {
    ctx.addIssue({
      code: "custom",
      message: `must be a positive decimal number of days (e.g. 30 or 0.5), at most ${MAX_RETENTION_DAYS}`,
    });
    return z.NEVER;
  }
  return days;
});

const configSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("0.0.0.0"),
  /**
   * `file:./data/ledger.db` (embedded, default), `libsql://…` (remote, with DATABASE_AUTH_TOKEN)
   * or `postgres://USER:PASSWORD@HOST:PORT/DB` (`postgresql://` too; PostgreSQL 14 or later).
   */
  DATABASE_URL: z.string().min(1).default("file:./data/ledger.db"),
  DATABASE_AUTH_TOKEN: z.string().optional(),
  /** PostgreSQL: most connections each process opens (its pool's size). */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(1000).default(10),
  /** `native` (synchronous libsql addon, file: URLs only) or `client` (@libsql/client). */
  DATABASE_DRIVER: z.enum(["auto", "native", "client"]).default("auto"),
  /** PRAGMA synchronous for file databases: FULL survives power loss, NORMAL only process crashes. */
  DATABASE_SYNCHRONOUS: z.enum(["FULL", "NORMAL"]).default("FULL"),
  /** Largest number of write units committed together by the write queue (group commit). */
  WRITE_BATCH_MAX: z.coerce.number().int().min(1).max(4096).default(256),
  /** Default reservation lifetime in seconds (1–86400, default 900; see docs/api.md). */
  RESERVATION_TTL_SECONDS: z.coerce.number().int().min(1).max(86400).default(900),
  /** croner pattern of the reservation expiry sweep (with seconds field). */
  EXPIRE_CRON: z.string().min(1).default("*/5 * * * * *"),
  /** croner pattern of the plan grant job. */
  GRANT_CRON: z.string().min(1).default("0 * * * * *"),
  /** Set to "false" to run without the in-process scheduler (e.g. a second replica). */
  SCHEDULER_ENABLED: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  /** Largest request body in bytes (the API's stated limit is 64 KiB; see docs/api.md). */
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(64 * 1024),
  /**
   * Where the service calls Stripe's API (docs/operations.md#stripe): its origin, default
   * Stripe's own; a local Stripe fake in tests.
   */
  STRIPE_API_URL: z.url({ protocol: /^https?$/ }).default("https://api.stripe.com"),
  /** Makes the first-start bootstrap key a chosen one (see docs/operations.md). */
  LEDGER_BOOTSTRAP_API_KEY: z.string().min(20).max(255).optional(),
  /** Seconds SIGTERM waits for requests in flight before closing anyway. */
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().min(0).max(600).default(10),
  /** Folder of the scheduled backups of a file database; unset (or empty) takes none. */
  BACKUP_DIR: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? undefined : v)),
  /** croner pattern (with seconds) of the scheduled backups; hourly by default. */
  BACKUP_CRON: z.string().min(1).default("0 0 * * * *"),
  /** How many finished scheduled backups are kept; older ones are removed. */
  BACKUP_KEEP: z.coerce.number().int().min(1).max(10000).default(24),
  /**
   * Seconds before each retry of a webhook delivery, comma-separated (fractions allowed): one
   * first attempt, then one retry after each delay, then `failed` (docs/operations.md#webhooks).
   */
  WEBHOOK_RETRY_SECONDS: retrySeconds.default([5, 30, 120, 600, 3600, 21600, 86400]),
  /** Seconds a webhook endpoint has to answer an attempt (a 2xx within it is delivered). */
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(10),
  /** Most webhook attempts this process has on the wire at once. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  /** Milliseconds between two looks for due webhook deliveries while there are none. */
  WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  /** Milliseconds between two looks for due automatic top-up attempts (docs/operations.md#stripe). */
  AUTO_TOPUP_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /**
   * Seconds a process's claim on an attempt keeps others off it: longer than a Stripe call with
   * its retries takes. A claim that runs out (a killed process) lets any process retry, with
   * the same Idempotency-Key.
   */
  AUTO_TOPUP_LEASE_SECONDS: z.coerce.number().min(0.1).max(3600).default(60),
  /**
   * "true" lets webhooks target loopback, private, link-local and other non-public addresses
   * (local development and tests; docs/operations.md#webhooks). Off by default.
   */
  WEBHOOK_ALLOW_PRIVATE: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
  /** Most active webhook endpoints per project. */
  WEBHOOK_MAX_PER_PROJECT: z.coerce.number().int().min(1).max(10_000).default(50),
  /**
   * Days (a positive decimal) ended webhook deliveries are kept, counted from their end; then
   * they, their events and deleted endpoints with nothing left are purged.
   */
  WEBHOOK_RETENTION_DAYS: retentionDays.default(30),
  /** croner pattern (with seconds) of the retention job; every minute by default. */
  RETENTION_CRON: z.string().min(1).default("0 * * * * *"),
});

export type Config = z.infer<typeof configSchema>;

/**
 * Parses the environment (default: `process.env`) into a `Config`.
 * @throws Error naming every invalid variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  return result.data;
}
