/**
 * `GET /metrics`: Prometheus text (prom-client) with the HTTP counters and latency histograms
 * per route pattern and status, the write queue (depth, batch duration, units per batch, failed
 * units), reservations by effective status, and scheduler runs and failures per job. Each
 * ledger has its own registry.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { startScheduler } from "../src/jobs/scheduler.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { silentLogger } from "../src/logger.ts";
import { createMetrics } from "../src/metrics.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { expectError } from "./contract.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

/** The value of the sample `name{labels}` in the exposition text (labels in any order). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    const wanted = Object.entries(labels);
    if (wanted.length === Object.keys(got).length && wanted.every(([k, v]) => got[k] === v)) {
      return Number(m[3]);
    }
  }
  return Number.NaN;
}

async function scrape(t: TestLedger): Promise<string> {
  const res = await t.app.request("/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

describe("GET /metrics", () => {
  let t: TestLedger;
  let text: string;

  beforeAll(async () => {
    t = await makeLedger({ fakeClock: "2026-11-21T08:00:00Z" });
    await fundedAccount(t, "customer-42", 100);
    const hold = async (amount: number, ttlSeconds = 900) =>
      (
        await t.call(reservationRoutes.create, {
          body: { accountId: "customer-42", amount, ttlSeconds },
        })
      ).reservation.id;
    const confirmed = await hold(9.6);
    await t.call(reservationRoutes.confirm, {
      body: { reservationId: confirmed, actualAmount: 6.96 },
    });
    const cancelled = await hold(1.5);
    await t.call(reservationRoutes.cancel, { body: { reservationId: cancelled } });
    await hold(2.25, 60); // pending, past its expiresAt once the clock moves
    t.advance(120_000);
    await hold(4.8); // pending
    // A 402 (a unit that rolls back alone), a 404 of a known route, a 404 of no route, a 401.
    const refused = { accountId: "customer-42", amount: 1_000 };
    await t.fail(ledgerRoutes.deduct, { body: refused }, 402, "INSUFFICIENT_CREDITS");
    // The raw query (not URL-encoded): the metrics must not hold the email as it was sent.
    const unknown = await t.api("GET", "/v1/accounts/get?accountId=ada@example.com");
    expectError(unknown, 404, "ACCOUNT_NOT_FOUND");
    const noRoute = await t.api("GET", "/v1/accounts/acc_01M7YK07B38628KR5DHES0CNDB");
    expectError(noRoute, 404, "NOT_FOUND");
    await t.fail(accountRoutes.list, { key: null }, 401, "UNAUTHORIZED");
    const balance = { accountId: "customer-42" };
    for (let i = 0; i < 3; i++) await t.call(accountRoutes.balance, { query: balance });
    text = await scrape(t);
  });
  afterAll(async () => t.close());

  it("counts requests per method, route pattern and status", () => {
    const requests = (method: string, route: string, status: string) =>
      sample(text, "ledger_http_requests_total", { method, route, status });
    expect(requests("POST", "/v1/accounts/create", "200")).toBe(1);
    expect(requests("POST", "/v1/reservations/create", "200")).toBe(4);
    expect(requests("POST", "/v1/accounts/credits/deduct", "402")).toBe(1);
    expect(requests("GET", "/v1/accounts/balance", "200")).toBe(3);
    expect(requests("GET", "/v1/accounts/get", "404")).toBe(1);
    expect(requests("GET", "/v1/accounts", "401")).toBe(1);
    expect(requests("GET", "unmatched", "404")).toBe(1);
  });

  it("has a latency histogram per route and status", () => {
    const labels = { method: "GET", route: "/v1/accounts/balance", status: "200" };
    expect(sample(text, "ledger_http_request_duration_seconds_count", labels)).toBe(3);
    expect(sample(text, "ledger_http_request_duration_seconds_sum", labels)).toBeGreaterThan(0);
    expect(
      sample(text, "ledger_http_request_duration_seconds_bucket", { ...labels, le: "+Inf" }),
    ).toBe(3);
  });

  it("never labels with a raw URL, id, query or email", () => {
    expect(text).not.toContain("customer-42");
    expect(text).not.toContain("ada@example.com");
    expect(text).not.toContain("acc_01M7YK07B38628KR5DHES0CNDB");
    expect(text).not.toContain("?");
  });

  it("reports the write queue: depth, batch durations, units per batch, failed units", () => {
    expect(sample(text, "ledger_write_queue_depth")).toBe(0);
    const batches = sample(text, "ledger_write_batch_duration_seconds_count", {
      outcome: "committed",
    });
    // Setup writes (models, project) and the 8 write requests above, in at least 1 batch each.
    expect(batches).toBeGreaterThanOrEqual(8);
    expect(sample(text, "ledger_write_batch_units_count")).toBe(batches);
    expect(sample(text, "ledger_write_batch_units_sum")).toBeGreaterThanOrEqual(batches);
    expect(sample(text, "ledger_write_batch_units_bucket", { le: "256" })).toBe(batches);
    expect(sample(text, "ledger_write_units_failed_total")).toBe(1);
  });

  it("counts reservations by effective status, a pending hold past expiresAt as expired", () => {
    expect(sample(text, "ledger_reservations", { status: "pending" })).toBe(1);
    expect(sample(text, "ledger_reservations", { status: "expired" })).toBe(1);
    expect(sample(text, "ledger_reservations", { status: "confirmed" })).toBe(1);
    expect(sample(text, "ledger_reservations", { status: "cancelled" })).toBe(1);
  });

  it("exports the process metrics", () => {
    expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(text).toContain("nodejs_heap_size_used_bytes");
  });

  it("counts scheduler runs and failures per job", async () => {
    const never = "0 0 0 1 1 *";
    const scheduler = startScheduler({
      queue: t.ledger.queue,
      clock: t.now,
      logger: silentLogger,
      expireCron: never,
      grantCron: never,
      retentionCron: never,
      webhookRetentionDays: 30,
      metrics: t.ledger.deps.metrics,
    });
    const failing = startScheduler({
      queue: { run: () => Promise.reject(new Error("disk full")), health: { failure: undefined } },
      clock: t.now,
      logger: silentLogger,
      expireCron: never,
      grantCron: never,
      retentionCron: never,
      webhookRetentionDays: 30,
      metrics: t.ledger.deps.metrics,
    });
    try {
      let after = await scrape(t);
      for (const job of ["expire-reservations", "grant-plans", "purge-idempotency-keys"]) {
        expect(sample(after, "ledger_job_runs_total", { job })).toBe(0);
        expect(sample(after, "ledger_job_failures_total", { job })).toBe(0);
      }
      await scheduler.runNow("expire-reservations");
      await scheduler.runNow("expire-reservations");
      await scheduler.runNow("grant-plans");
      await failing.runNow("purge-idempotency-keys");
      after = await scrape(t);
      const runs = (job: string) => sample(after, "ledger_job_runs_total", { job });
      const failures = (job: string) => sample(after, "ledger_job_failures_total", { job });
      expect(runs("expire-reservations")).toBe(2);
      expect(failures("expire-reservations")).toBe(0);
      expect(runs("grant-plans")).toBe(1);
      expect(runs("purge-idempotency-keys")).toBe(1);
      expect(failures("purge-idempotency-keys")).toBe(1);
      expect(
        sample(after, "ledger_job_duration_seconds_count", { job: "expire-reservations" }),
      ).toBe(2);
      expect(
        sample(after, "ledger_job_last_success_timestamp_seconds", { job: "grant-plans" }),
      ).toBeGreaterThan(Date.now() / 1000 - 60);
      // The sweeper marked the expired hold: still one expired, one pending.
      expect(sample(after, "ledger_reservations", { status: "expired" })).toBe(1);
      expect(sample(after, "ledger_reservations", { status: "pending" })).toBe(1);
    } finally {
      scheduler.stop();
      failing.stop();
    }
  });

  it("keeps each ledger's metrics apart", async () => {
    const other = await makeLedger();
    try {
      await other.api("GET", "/v1/accounts");
      const own = await scrape(other);
      expect(
        sample(own, "ledger_http_requests_total", {
          method: "GET",
          route: "/v1/accounts",
          status: "200",
        }),
      ).toBe(1);
      expect(
        sample(own, "ledger_http_requests_total", {
          method: "POST",
          route: "/v1/accounts/create",
          status: "200",
        }),
      ).toBeNaN();
      expect(sample(own, "ledger_reservations", { status: "pending" })).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("still answers when the database cannot be read, without the reservation gauge", async () => {
    const metrics = createMetrics({
      processMetrics: false,
      queueDepth: () => 3,
      reservationsByStatus: () => Promise.reject(new Error("SQLITE_IOERR")),
    });
    metrics.observeRequest("BREW", "unmatched", 404, 0.002);
    const text = await metrics.render();
    expect(sample(text, "ledger_write_queue_depth")).toBe(3);
    expect(
      sample(text, "ledger_http_requests_total", {
        method: "OTHER",
        route: "unmatched",
        status: "404",
      }),
    ).toBe(1);
    expect(text).not.toMatch(/^ledger_reservations\{/m);
    expect(text).not.toContain("process_cpu");
  });
});
