/**
 * Several servers on one PostgreSQL database (docs/operations.md, "PostgreSQL and several
 * servers"): three `ledger serve` processes start at once on a fresh database (one applies the
 * migrations and creates the bootstrap project, the others wait and find them), then take
 * requests spread over all three. Across them: no double spend, one Idempotency-Key applies
 * once, a reservation ends once, the sweeper marks each expired hold once, and `ledger verify`
 * passes. PostgreSQL only (the suite's postgres project).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError } from "./contract.ts";
import {
  countStatuses,
  expectDistinctBalances,
  fetchFrom,
  type JsonReply,
  okBody,
  sendJson,
} from "./http-client.ts";
import { createPgDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type RunningProcess, runCliAsync, spawnServer } from "./processes.ts";

/** An answer, with the index of the server that gave it. */
interface Reply extends JsonReply {
  server: number;
}

describe.runIf(TEST_ENGINE === "postgres")("three servers on one PostgreSQL database", () => {
  const apiKey = `ldg_multi_${randomBytes(16).toString("hex")}`;
  let database: { url: string; drop: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let servers: RunningProcess[] = [];
  let next = 0;

  beforeAll(async () => {
    database = await createPgDatabase();
    env = {
      ...process.env,
      DATABASE_URL: database.url,
      LEDGER_BOOTSTRAP_API_KEY: apiKey,
      LOG_LEVEL: "warn",
      EXPIRE_CRON: "* * * * * *",
    };
    // All three start at once on the empty database.
    servers = await Promise.all([spawnServer(env), spawnServer(env), spawnServer(env)]);
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill("SIGTERM");
    const exits = await Promise.all(servers.map((s) => s.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0]);
    await database.drop();
  }, 60_000);

  /** Sends a request to server `at`, or to the next one in turn. */
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    options: { key?: string; at?: number } = {},
  ): Promise<Reply> => {
    const server = options.at ?? next++ % servers.length;
    const send = fetchFrom(`${servers[server]?.base}`);
    const idempotencyKey = options.key;
    return { ...(await sendJson(send, apiKey, method, path, { body, idempotencyKey })), server };
  };
  const funded = async (externalId: string, credits: number) => {
    expect((await call("POST", "/v1/accounts/create", { externalId })).status).toBe(200);
    const add = await call("POST", "/v1/accounts/credits/add", {
      accountId: externalId,
      amount: credits,
    });
    expect(add.status).toBe(200);
  };
  const balance = async (externalId: string) =>
    okBody(
      accountRoutes.balance,
      await call("GET", `/v1/accounts/balance?externalId=${externalId}`),
    );

  it("started three servers with one bootstrap project and one set of migrations", async () => {
    const printed = servers.filter((s) => s.stdout().includes("shown only this once"));
    expect(printed).toHaveLength(0); // the key was chosen, so none is printed
    for (let i = 0; i < servers.length; i++) {
      const ready = await fetch(`${servers[i]?.base}/ready`);
      expect(ready.status).toBe(200);
      expect((await call("GET", "/v1/accounts", undefined, { at: i })).status).toBe(200);
    }
  });

  it("grants exactly 6 of 20 simultaneous reservations of 75 against 500", async () => {
    await funded("r1", 500);
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("POST", "/v1/reservations/create", { accountId: "r1", amount: 75 }),
      ),
    );
    expect(new Set(replies.map((r) => r.server)).size).toBe(3);
    expect(countStatuses(replies)).toEqual({ 200: 6, 402: 14 });
    for (const r of replies.filter((x) => x.status === 402)) {
      expectError(r, 402, "INSUFFICIENT_CREDITS");
    }
    expect(await balance("r1")).toMatchObject({ balance: 500, reserved: 450, available: 50 });
  });

  it("lets exactly 100 of 300 simultaneous deductions of 1 through from 100", async () => {
    await funded("d1", 100);
    const replies = await Promise.all(
      Array.from({ length: 300 }, () =>
        call("POST", "/v1/accounts/credits/deduct", { accountId: "d1", amount: 1 }),
      ),
    );
    expect(countStatuses(replies)).toEqual({ 200: 100, 402: 200 });
    expectDistinctBalances(replies, 100);
    expect((await balance("d1")).balance).toBe(0);
    const txs = await call("GET", "/v1/transactions?accountId=d1&limit=1");
    expect(okBody(transactionRoutes.list, txs).pagination.totalCount).toBe(101);
  });

  it("applies one Idempotency-Key sent to all three servers at once exactly once", async () => {
    await funded("k1", 100);
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call(
          "POST",
          "/v1/accounts/credits/deduct",
          { accountId: "k1", amount: 30 },
          { key: "one-key-three-servers", at: i % 3 },
        ),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(new Set(replies.map((r) => r.text)).size).toBe(1);
    expect(replies.filter((r) => r.replayed === null)).toHaveLength(1);
    expect((await balance("k1")).balance).toBe(70);
    const txs = await call("GET", "/v1/transactions?accountId=k1");
    expect(okBody(transactionRoutes.list, txs).pagination.totalCount).toBe(2);
  });

  it("creates one account when all three receive the same externalId at once", async () => {
    const replies = await Promise.all(
      Array.from({ length: 9 }, () => call("POST", "/v1/accounts/create", { externalId: "dup" })),
    );
    expect(countStatuses(replies)).toEqual({ 200: 1, 409: 8 });
    for (const r of replies.filter((x) => x.status === 409)) {
      expectError(r, 409, "DUPLICATE_EXTERNAL_ID");
    }
  });

  it("ends a reservation once when all three confirm and cancel it at once", async () => {
    await funded("e1", 100);
    const hold = await call("POST", "/v1/reservations/create", { accountId: "e1", amount: 40 });
    const reservationId = okBody(reservationRoutes.create, hold).reservation.id;
    const replies = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        i % 2 === 0
          ? call("POST", "/v1/reservations/confirm", { reservationId, actualAmount: 25 })
          : call("POST", "/v1/reservations/cancel", { reservationId }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 200)) {
      expectError(r, 409, "RESERVATION_NOT_PENDING");
    }
    const view = await balance("e1");
    expect(view.reserved).toBe(0);
    // The even requests confirmed (25 of the 40 spent), the odd ones cancelled.
    const won = replies.findIndex((r) => r.status === 200);
    const confirmed = won % 2 === 0;
    const route = confirmed ? reservationRoutes.confirm : reservationRoutes.cancel;
    okBody(route, replies[won] ?? { status: 0, body: undefined });
    expect(view.balance).toBe(confirmed ? 75 : 100);
  });

  it("marks each expired hold once while every server runs the sweeper", async () => {
    await funded("x1", 100);
    for (let i = 0; i < 10; i++) {
      const r = await call("POST", "/v1/reservations/create", {
        accountId: "x1",
        amount: 1,
        ttlSeconds: 1,
      });
      expect(r.status).toBe(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 3500));
    const list = await call("GET", "/v1/reservations?accountId=x1&limit=100");
    const holds = okBody(reservationRoutes.list, list).reservations;
    expect(holds.map((h) => h.status)).toEqual(Array(10).fill("expired"));
    for (const s of servers) {
      const metrics = await (await fetch(`${s.base}/metrics`)).text();
      const failures = /ledger_job_failures_total\{job="expire-reservations"\} (\d+)/.exec(metrics);
      expect(failures?.[1]).toBe("0");
    }
  });

  it("passes ledger verify on the database the three servers share, while they serve", async () => {
    const verify = await runCliAsync(["verify"], env);
    expect(verify.stdout).toMatch(/verified \d+ accounts, \d+ transactions: OK/);
    expect(verify.status).toBe(0);
  });
});
