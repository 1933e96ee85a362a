/**
 * What the app is built from (`createApp(deps)`) and what middleware puts on each request.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Config } from "../config.ts";
import type { Database } from "../db/client.ts";
import type { Clock, WriteQueue } from "../db/write-path.ts";
import type { Logger } from "../logger.ts";
import type { Metrics } from "../metrics.ts";
import type { ResolveHost } from "../resolve-host.ts";

export interface AppDeps {
  db: Database;
  queue: WriteQueue;
  config: Pick<
    Config,
    | "RESERVATION_TTL_SECONDS"
    | "BODY_LIMIT_BYTES"
    | "WEBHOOK_ALLOW_PRIVATE"
    | "WEBHOOK_MAX_PER_PROJECT"
    | "STRIPE_API_URL"
  >;
  clock: Clock;
  logger: Logger;
  /** The ledger's Prometheus registry and instruments (`GET /metrics`). */
  metrics: Metrics;
  /** Resolves webhook hosts (default: the system's resolver); tests pass a stub. */
  resolveHost?: ResolveHost;
}

export interface AppEnv {
  Variables: {
    /** The project of the request's API key (set by the auth middleware on /v1). */
    projectId: string;
    requestId: string;
  };
}

export type App = OpenAPIHono<AppEnv>;
