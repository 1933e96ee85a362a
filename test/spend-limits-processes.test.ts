/**
 * Spend limits across processes (docs/api.md#spend-limits, contract sections 11 and 18): three
 * `ledger serve` processes on one PostgreSQL database take 50 simultaneous deductions of 10 on
 * an account with a day limit of 100 (and ample credits), spread over all three: exactly 10
 * succeed and 40 are refused with SPEND_LIMIT_EXCEEDED; the window's counter is exact and
 * `ledger verify` passes. PostgreSQL only (the suite's postgres project).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { expectError } from "./contract.ts";
import { countStatuses, fetchFrom, type JsonReply, okBody, sendJson } from "./http-client.ts";
import { createPgDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type RunningProcess, runCliAsync, spawnServer } from "./processes.ts";

describe.runIf(TEST_ENGINE === "postgres")("spend limits across three servers", () => {
  const apiKey = `ldg_limits_${randomBytes(16).toString("hex")}`;
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
    };
    servers = await Promise.all([spawnServer(env), spawnServer(env), spawnServer(env)]);
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill("SIGTERM");
    await Promise.all(servers.map((s) => s.exited));
    await database.drop();
  }, 60_000);

  const call = async (method: string, path: string, body?: unknown) => {
    const server = next++ % servers.length;
    const send = fetchFrom(`${servers[server]?.base}`);
    const reply: JsonReply = await sendJson(send, apiKey, method, path, { body });
    return { ...reply, server };
  };

  it("gives exactly 10 of 50 simultaneous deductions of 10 under a day limit of 100", async () => {
    const create = await call("POST", "/v1/accounts/create", {
      externalId: "l1",
      spendLimits: [{ period: "day", amount: 100 }],
    });
    expect(create.status).toBe(200);
    const add = await call("POST", "/v1/accounts/credits/add", { accountId: "l1", amount: 10_000 });
    expect(add.status).toBe(200);
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        call("POST", "/v1/accounts/credits/deduct", { accountId: "l1", amount: 10 }),
      ),
    );
    expect(new Set(replies.map((r) => r.server)).size).toBe(3);
    expect(countStatuses(replies)).toEqual({ 200: 10, 402: 40 });
    for (const r of replies.filter((x) => x.status === 402)) {
      expectError(r, 402, "SPEND_LIMIT_EXCEEDED");
    }
    const limits = okBody(
      accountRoutes.limits,
      await call("GET", "/v1/accounts/limits?externalId=l1"),
    );
    expect(limits.limits[0]).toMatchObject({ spent: 100, held: 0, remaining: 0 });
    expect(limits.available).toBe(9900);
    const verify = await runCliAsync(["verify"], env);
    expect(verify.stdout).toMatch(/verified \d+ accounts, \d+ transactions: OK/);
    expect(verify.status).toBe(0);
  });
});
