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
import type { RouteConfig } from "@hono/zod-openapi";
import { afterEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import type { OkBody } from "./contract.ts";
import { fetchFrom, okBody, routePath, sendJson } from "./http-client.ts";
import { createPgDatabase, freshDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type RunningProcess, spawnServer } from "./processes.ts";
import { closedPort, type Receiver, startReceiver } from "./webhooks-receiver.ts";

const apiKey = `ldg_hooks_${randomBytes(16).toString("hex")}`;
const cleanup: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * Calls `route` on a running server (`query` for a GET, `body` for a POST) and expects a 200.
 * @returns the body, checked against the route's schema
 */
async function call<R extends RouteConfig>(
  server: RunningProcess,
  route: R,
  input: { query?: Record<string, string | number>; body?: unknown },
): Promise<OkBody<R>> {
  const path = routePath(route, input.query);
  const method = route.method.toUpperCase();
  const res = await sendJson(fetchFrom(server.base), apiKey, method, path, { body: input.body });
  return okBody(route, res, `${path} answered ${res.status}: ${res.text}`);
}

/** Creates an account with a threshold of 1 and takes it from 2 to 0.5 credits: one balance.low. */
async function crossing(servers: RunningProcess[], externalId: string, i = 0) {
  const at = (k: number) => servers[(i + k) % servers.length] as RunningProcess;
  const create = { externalId, lowBalanceThreshold: 1 };
  await call(at(0), accountRoutes.create, { body: create });
  await call(at(1), ledgerRoutes.add, { body: { accountId: externalId, amount: 2 } });
  return call(at(2), ledgerRoutes.deduct, { body: { accountId: externalId, amount: 1.5 } });
}

/** The deliveries of endpoint `webhookId`, newest first. */
async function deliveries(server: RunningProcess, webhookId: string, limit = 50) {
  return call(server, webhookRoutes.deliveries, { query: { webhookId, limit } });
}

/** Creates an endpoint at `url`. @returns it, with its secret */
async function createHook(server: RunningProcess, url: string) {
  return (await call(server, webhookRoutes.create, { body: { url } })).webhook;
}

/**
 * A fresh database for server processes (a file in a temporary folder on SQLite), dropped and
 * removed after the test. @returns the env of a server on it, with `settings` added
 */
async function freshServerEnv(settings: Record<string, string>): Promise<NodeJS.ProcessEnv> {
  const dir = mkdtempSync(join(tmpdir(), "ledger-hooks-"));
  const database = await freshDatabase(dir);
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => database.drop(),
  );
  return serverEnv(database.env, settings);
}

/** The env of a server on `database` with the test's API key, and `settings` added. */
function serverEnv(
  database: { DATABASE_URL: string; DATABASE_AUTH_TOKEN?: string },
  settings: Record<string, string>,
): NodeJS.ProcessEnv {
  // The receivers are on 127.0.0.1, which only WEBHOOK_ALLOW_PRIVATE lets a webhook target.
  const base = {
    ...database,
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: "warn",
    WEBHOOK_ALLOW_PRIVATE: "true",
  };
  return { ...process.env, ...base, ...settings };
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
    const env = await freshServerEnv({
      WEBHOOK_RETRY_SECONDS: Array(20).fill("0.5").join(","),
      WEBHOOK_TIMEOUT_SECONDS: "1",
      WEBHOOK_POLL_MS: "50",
    });
    // The receiver is down: its port refuses connections.
    const port = await closedPort();
    let server = await spawnServer(env);
    cleanup.push(() => stop(server));
    const webhook = await createHook(server, `http://127.0.0.1:${port}/hook`);
    const deduction = await crossing([server], "acme");
    const log = async () => (await deliveries(server, webhook.id)).deliveries[0];
    await waitFor(async () => ((await log())?.attempts ?? 0) >= 2, 10_000, "two refused attempts");
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
    await waitFor(async () => (await log())?.status === "delivered", 5000, "delivered status");
    expect((await log())?.eventId).toBe(got?.id);
  }, 60_000);

  it("attempts again a delivery that was on the wire when the process was killed", async () => {
    const env = await freshServerEnv({
      WEBHOOK_RETRY_SECONDS: "0.5,0.5,0.5",
      WEBHOOK_TIMEOUT_SECONDS: "1",
      WEBHOOK_POLL_MS: "50",
    });
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    // The first attempt never gets an answer: the process dies while it waits.
    receiver.answer = (_path, n) => (n === 1 ? "hang" : 200);
    let server = await spawnServer(env);
    cleanup.push(() => stop(server));
    const webhook = await createHook(server, receiver.url("/hook"));
    receiver.setSecret("/hook", webhook.secret);
    await crossing([server], "acme");
    await receiver.waitFor(() => receiver.attempts.get("/hook") === 1, 10_000, "the first attempt");
    await kill9(server);
    server = await spawnServer(env);
    // Attempted again once the dead process's lease (timeout + 10 s) has run out.
    await receiver.waitFor(() => receiver.delivered.length === 1, 25_000, "the second attempt");
    expect(receiver.attempts.get("/hook")).toBe(2);
    const [log] = (await deliveries(server, webhook.id)).deliveries;
    await waitFor(
      async () => (await deliveries(server, webhook.id)).deliveries[0]?.status === "delivered",
      5000,
      "delivered status",
    );
    expect(log?.eventId).toBe(receiver.delivered[0]?.id);
  }, 60_000);
});

describe.runIf(TEST_ENGINE === "postgres")("three servers on one PostgreSQL database", () => {
  it("deliver every event, never one event from two processes at once", async () => {
    const database = await createPgDatabase();
    cleanup.push(() => database.drop());
    const env = serverEnv(
      { DATABASE_URL: database.url },
      {
        WEBHOOK_RETRY_SECONDS: "0.05,0.05,0.05,0.05,0.05",
        WEBHOOK_POLL_MS: "10",
        WEBHOOK_CONCURRENCY: "4",
      },
    );
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
    const webhook = await createHook(first, receiver.url("/hook"));
    receiver.setSecret("/hook", webhook.secret);

    const events = 60;
    await Promise.all(Array.from({ length: events }, (_, i) => crossing(servers, `acct-${i}`, i)));
    const ids = () => new Set(receiver.delivered.map((r) => r.id));
    await receiver.waitFor(() => ids().size === events, 30_000, `${events} events`);
    await new Promise((r) => setTimeout(r, 500));

    expect(receiver.invalid).toEqual([]);
    expect(receiver.maxInFlightPerEvent).toBe(1);
    expect(receiver.delivered).toHaveLength(events);
    const listed = await deliveries(first, webhook.id, 500);
    expect(listed.pagination.totalCount).toBe(events);
    expect(listed.deliveries.every((d) => d.status === "delivered")).toBe(true);
    expect(listed.deliveries.every((d) => d.attempts === 2)).toBe(true);
    expect(new Set(listed.deliveries.map((d) => d.eventId))).toEqual(ids());
  }, 90_000);
});

describe.runIf(TEST_ENGINE === "postgres")("two servers on one PostgreSQL database", () => {
  it("keep the webhook limit exactly when creates race on both", async () => {
    const database = await createPgDatabase();
    cleanup.push(() => database.drop());
    const env = serverEnv({ DATABASE_URL: database.url }, { WEBHOOK_MAX_PER_PROJECT: "4" });
    const servers = await Promise.all([spawnServer(env), spawnServer(env)]);
    cleanup.push(() => Promise.all(servers.map(stop)).then(() => undefined));
    const statuses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => {
        const server = servers[i % 2] as RunningProcess;
        const body = { url: `http://127.0.0.1:9/race-${i}` };
        return sendJson(fetchFrom(server.base), apiKey, "POST", "/v1/webhooks/create", {
          body,
        }).then((res) => res.status);
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s === 409)).toHaveLength(12);
    const [first] = servers;
    if (!first) throw new Error("no server");
    const listed = await call(first, webhookRoutes.list, { query: { limit: 100 } });
    expect(listed.pagination.totalCount).toBe(4);
  }, 60_000);
});
