/**
 * Webhook delivery by real `ledger serve` processes (docs/api.md#delivery): at least once across
 * `kill -9` (between attempts, and in the middle of one), and, on PostgreSQL, three processes on
 * one database delivering every event with never two attempts of one event on the wire at once.
 * Needs `npm run build` (dist/).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createPgDatabase, freshDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type RunningProcess, spawnServer } from "./processes.ts";
import { closedPort, type Receiver, startReceiver } from "./webhooks-receiver.ts";

const apiKey = `ldg_hooks_${randomBytes(16).toString("hex")}`;
const cleanup: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

// biome-ignore lint/suspicious/noExplicitAny: responses are inspected field by field.
type Json = any;

/** A JSON call to a running server. */
async function call(
  server: RunningProcess,
  method: string,
  path: string,
  body?: unknown,
): Promise<Json> {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json();
  if (res.status !== 200)
    throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Creates an account with a threshold of 1 and takes it from 2 to 0.5 credits: one balance.low. */
async function crossing(servers: RunningProcess[], externalId: string, i = 0) {
  const at = (k: number) => servers[(i + k) % servers.length] as RunningProcess;
  await call(at(0), "POST", "/v1/accounts/create", { externalId, lowBalanceThreshold: 1 });
  await call(at(1), "POST", "/v1/accounts/credits/add", { accountId: externalId, amount: 2 });
  return call(at(2), "POST", "/v1/accounts/credits/deduct", { accountId: externalId, amount: 1.5 });
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function kill9(server: RunningProcess) {
  server.child.kill("SIGKILL");
  await server.exited;
}

async function stop(server: RunningProcess) {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill("SIGTERM");
  await server.exited;
}

describe("delivery across kill -9", () => {
  it("delivers an event whose first attempts failed, after kill -9 and a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-hooks-"));
    const database = await freshDatabase(dir);
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => database.drop(),
    );
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      LEDGER_BOOTSTRAP_API_KEY: apiKey,
      LOG_LEVEL: "warn",
      WEBHOOK_RETRY_SECONDS: Array(20).fill("0.5").join(","),
      WEBHOOK_TIMEOUT_SECONDS: "1",
      WEBHOOK_POLL_MS: "50",
    };
    // The receiver is down: its port refuses connections.
    const port = await closedPort();
    let server = await spawnServer(env);
    cleanup.push(() => stop(server));
    const { webhook } = await call(server, "POST", "/v1/webhooks/create", {
      url: `http://127.0.0.1:${port}/hook`,
    });
    const deduction = await crossing([server], "acme");
    const log = async () =>
      (await call(server, "GET", `/v1/webhooks/deliveries?webhookId=${webhook.id}`)).deliveries[0];
    await waitFor(async () => (await log())?.attempts >= 2, 10_000, "two refused attempts");
    expect(await log()).toMatchObject({ status: "pending", lastError: "ECONNREFUSED" });

    await kill9(server);
    server = await spawnServer(env);
    const receiver = await startReceiver(port);
    cleanup.push(() => receiver.close());
    receiver.setSecret("/hook", webhook.secret);
    await receiver.waitFor(() => receiver.delivered.length >= 1, 15_000, "the delivery");
    expect(receiver.invalid).toEqual([]);
    const [got] = receiver.delivered;
    expect(got?.event).toMatchObject({
      type: "balance.low",
      data: { externalId: "acme", available: 0.5, transactionId: deduction.transactionId },
    });
    await waitFor(async () => (await log()).status === "delivered", 5000, "delivered status");
    expect((await log()).eventId).toBe(got?.id);
  }, 60_000);

  it("attempts again a delivery that was on the wire when the process was killed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-hooks-"));
    const database = await freshDatabase(dir);
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => database.drop(),
    );
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      LEDGER_BOOTSTRAP_API_KEY: apiKey,
      LOG_LEVEL: "warn",
      WEBHOOK_RETRY_SECONDS: "0.5,0.5,0.5",
      WEBHOOK_TIMEOUT_SECONDS: "1",
      WEBHOOK_POLL_MS: "50",
    };
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    // The first attempt never gets an answer: the process dies while it waits.
    receiver.answer = (_path, n) => (n === 1 ? "hang" : 200);
    let server = await spawnServer(env);
    cleanup.push(() => stop(server));
    const { webhook } = await call(server, "POST", "/v1/webhooks/create", {
      url: receiver.url("/hook"),
    });
    receiver.setSecret("/hook", webhook.secret);
    await crossing([server], "acme");
    await receiver.waitFor(() => receiver.attempts.get("/hook") === 1, 10_000, "the first attempt");
    await kill9(server);
    server = await spawnServer(env);
    // Attempted again once the dead process's lease (timeout + 10 s) has run out.
    await receiver.waitFor(() => receiver.delivered.length === 1, 25_000, "the second attempt");
    expect(receiver.attempts.get("/hook")).toBe(2);
    const [log] = (await call(server, "GET", `/v1/webhooks/deliveries?webhookId=${webhook.id}`))
      .deliveries;
    await waitFor(
      async () =>
        (await call(server, "GET", `/v1/webhooks/deliveries?webhookId=${webhook.id}`)).deliveries[0]
          .status === "delivered",
      5000,
      "delivered status",
    );
    expect(log.eventId).toBe(receiver.delivered[0]?.id);
  }, 60_000);
});

describe.runIf(TEST_ENGINE === "postgres")("three servers on one PostgreSQL database", () => {
  it("deliver every event, never one event from two processes at once", async () => {
    const database = await createPgDatabase();
    cleanup.push(() => database.drop());
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      LEDGER_BOOTSTRAP_API_KEY: apiKey,
      LOG_LEVEL: "warn",
      WEBHOOK_RETRY_SECONDS: "0.05,0.05,0.05,0.05,0.05",
      WEBHOOK_POLL_MS: "10",
      WEBHOOK_CONCURRENCY: "4",
    };
    const servers = await Promise.all([spawnServer(env), spawnServer(env), spawnServer(env)]);
    cleanup.push(() => Promise.all(servers.map(stop)).then(() => undefined));
    const receiver: Receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    // Each event fails once first, so its retry may be claimed by any of the three; every
    // answer takes 20 ms, so two attempts of one event would overlap on the wire.
    const seen = new Set<string>();
    receiver.delayMs = 20;
    receiver.answer = (_path, _n, id) => {
      if (seen.has(id)) return 200;
      seen.add(id);
      return 500;
    };
    const [first] = servers;
    if (!first) throw new Error("no server");
    const { webhook } = await call(first, "POST", "/v1/webhooks/create", {
      url: receiver.url("/hook"),
    });
    receiver.setSecret("/hook", webhook.secret);

    const events = 60;
    await Promise.all(Array.from({ length: events }, (_, i) => crossing(servers, `acct-${i}`, i)));
    const ids = () => new Set(receiver.delivered.map((r) => r.id));
    await receiver.waitFor(() => ids().size === events, 30_000, `${events} events`);
    await new Promise((r) => setTimeout(r, 500));

    expect(receiver.invalid).toEqual([]);
    expect(receiver.maxInFlightPerEvent).toBe(1);
    expect(receiver.delivered).toHaveLength(events);
    const { deliveries, pagination } = await call(
      first,
      "GET",
      `/v1/webhooks/deliveries?webhookId=${webhook.id}&limit=500`,
    );
    expect(pagination.totalCount).toBe(events);
    expect(deliveries.every((d: { status: string }) => d.status === "delivered")).toBe(true);
    expect(deliveries.every((d: { attempts: number }) => d.attempts === 2)).toBe(true);
    expect(new Set(deliveries.map((d: { eventId: string }) => d.eventId))).toEqual(ids());
  }, 90_000);
});
