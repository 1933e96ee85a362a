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
import { createPgDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type RunningProcess, runCliAsync, spawnServer } from "./processes.ts";

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: responses are inspected field by field.
  body: any;
  text: string;
  replayed: string | null;
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
    const headers: Record<string, string> = {
      "X-API-Key": apiKey,
      "Content-Type": "application/json",
    };
    if (options.key) headers["Idempotency-Key"] = options.key;
    const res = await fetch(`${servers[server]?.base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: JSON.parse(text),
      text,
      replayed: res.headers.get("Idempotent-Replayed"),
      server,
    };
  };
  const statuses = (replies: Reply[]) => {
    const counts: Record<number, number> = {};
    for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1;
    return counts;
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
    (await call("GET", `/v1/accounts/balance?externalId=${externalId}`)).body as {
      balance: number;
      reserved: number;
      available: number;
    };

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
    expect(statuses(replies)).toEqual({ 200: 6, 402: 14 });
    for (const r of replies.filter((x) => x.status === 402)) {
      expect(r.body.error.code).toBe("INSUFFICIENT_CREDITS");
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
    expect(statuses(replies)).toEqual({ 200: 100, 402: 200 });
    const balances = replies.filter((r) => r.status === 200).map((r) => r.body.balance as number);
    expect([...balances].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect((await balance("d1")).balance).toBe(0);
    const txs = await call("GET", "/v1/transactions?accountId=d1&limit=1");
    expect(txs.body.pagination.totalCount).toBe(101);
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
    expect(txs.body.pagination.totalCount).toBe(2);
  });

  it("creates one account when all three receive the same externalId at once", async () => {
    const replies = await Promise.all(
      Array.from({ length: 9 }, () => call("POST", "/v1/accounts/create", { externalId: "dup" })),
    );
    expect(statuses(replies)).toEqual({ 200: 1, 409: 8 });
    for (const r of replies.filter((x) => x.status === 409)) {
      expect(r.body.error.code).toBe("DUPLICATE_EXTERNAL_ID");
    }
  });

  it("ends a reservation once when all three confirm and cancel it at once", async () => {
    await funded("e1", 100);
    const hold = await call("POST", "/v1/reservations/create", { accountId: "e1", amount: 40 });
    const reservationId = hold.body.reservation.id as string;
    const replies = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        i % 2 === 0
          ? call("POST", "/v1/reservations/confirm", { reservationId, actualAmount: 25 })
          : call("POST", "/v1/reservations/cancel", { reservationId }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("RESERVATION_NOT_PENDING");
    }
    const view = await balance("e1");
    expect(view.reserved).toBe(0);
    const won = replies.find((r) => r.status === 200);
    expect(view.balance).toBe(won?.body.actualAmount === undefined ? 100 : 75);
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
    const holds = list.body.reservations as { status: string }[];
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
