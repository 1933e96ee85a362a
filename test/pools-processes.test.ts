/**
 * Accounts inside accounts across processes (contract sections 11, 18 and 24): two `ledger
 * serve` processes on one PostgreSQL database take 200 simultaneous reservations of 1 spread
 * over two members of one pool (created with `parentId`, so funded by the pool), each member
 * capped at 6 a day. A pool of 10 grants exactly 10, neither member above 6; a pool of 20
 * grants exactly 6 to each. Every refusal is a 402 naming the pool (INSUFFICIENT_CREDITS) or the
 * member whose cap refused (SPEND_LIMIT_EXCEEDED); the holds read back at every level, and
 * `ledger verify` passes. PostgreSQL only (the suite's postgres project).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStatuses, fetchFrom, type JsonReply, sendJson } from "./http-client.ts";
import { createPgDatabase, TEST_ENGINE } from "./pg-harness.ts";
import { type PoolErrorCode, refusal } from "./pools-helpers.ts";
import { type RunningProcess, runCliAsync, spawnServer } from "./processes.ts";

interface Account {
  id: string;
  externalId: string;
  parentId: string | null;
  funding: string;
  fundedBy: string;
}

interface LimitWindow {
  period: string;
  held: number;
  spent: number;
  remaining: number;
}

describe.runIf(TEST_ENGINE === "postgres")("a pool's members across two servers", () => {
  const apiKey = `ldg_pools_${randomBytes(16).toString("hex")}`;
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
    servers = await Promise.all([spawnServer(env), spawnServer(env)]);
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill("SIGTERM");
    await Promise.all(servers.map((s) => s.exited));
    await database.drop();
  }, 60_000);

  /** Calls the servers in turn. @returns the answer and which server gave it */
  const call = async (method: string, path: string, body?: unknown) => {
    const server = next++ % servers.length;
    const send = fetchFrom(`${servers[server]?.base}`);
    const reply: JsonReply = await sendJson(send, apiKey, method, path, { body });
    return { ...reply, server };
  };
  const ok = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const reply = await call(method, path, body);
    expect(reply.status, `${method} ${path}: ${reply.text}`).toBe(200);
    return reply.body as T;
  };
  const create = async (fields: Record<string, unknown>) =>
    (await ok<{ account: Account }>("POST", "/v1/accounts/create", fields)).account;

  /**
   * A pool `<tag>-pool` of `credits` with members `<tag>-a` and `<tag>-b` (each capped at 6 a
   * day), then 200 simultaneous reservations of 1 alternating between the members and between
   * the servers. @returns the pool, the members and each member's successes
   */
  const race = async (tag: string, credits: number) => {
    const pool = await create({ externalId: `${tag}-pool` });
    await ok("POST", "/v1/accounts/credits/add", { accountId: pool.id, amount: credits });
    const cap = [{ period: "day", amount: 6 }];
    const a = await create({ externalId: `${tag}-a`, parentId: pool.id, spendLimits: cap });
    const b = await create({ externalId: `${tag}-b`, parentId: `${tag}-pool`, spendLimits: cap });
    for (const m of [a, b]) {
      expect(m).toMatchObject({ parentId: pool.id, funding: "parent", fundedBy: pool.id });
    }
    const members = [a, b];
    const replies = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const member = members[Math.floor(i / 2) % 2] ?? a;
        const reply = await call("POST", "/v1/reservations/create", {
          accountId: member.externalId,
          amount: 1,
        });
        return { reply, member };
      }),
    );
    // Each member was called through both servers.
    for (const m of members) {
      const through = new Set(replies.filter((r) => r.member === m).map((r) => r.reply.server));
      expect(through.size).toBe(2);
    }
    const wins = new Map<string, number>(members.map((m) => [m.id, 0]));
    for (const { reply, member } of replies) {
      if (reply.status === 200) {
        const { reservation } = reply.body as { reservation: { accountId: string } };
        expect(reservation.accountId).toBe(member.id);
        wins.set(member.id, (wins.get(member.id) ?? 0) + 1);
        continue;
      }
      const code = (reply.body as { error?: { code?: string } }).error?.code ?? "";
      expect(["INSUFFICIENT_CREDITS", "SPEND_LIMIT_EXCEEDED"]).toContain(code);
      const { details } = refusal(reply, 402, code as PoolErrorCode);
      expect(details.accountId).toBe(code === "INSUFFICIENT_CREDITS" ? pool.id : member.id);
    }
    // The holds read back at the member's level and, as its ancestor, at the pool's.
    for (const m of members) {
      const view = await ok<{ limits: LimitWindow[]; ancestors: { accountId: string }[] }>(
        "GET",
        `/v1/accounts/limits?accountId=${m.id}`,
      );
      expect(view.limits[0]).toMatchObject({ held: wins.get(m.id), spent: 0 });
      expect(view.ancestors.map((x) => x.accountId)).toEqual([pool.id]);
    }
    return {
      statuses: countStatuses(replies.map((r) => r.reply)),
      winsA: wins.get(a.id) ?? 0,
      winsB: wins.get(b.id) ?? 0,
      pool,
    };
  };

  const balanceOf = (ref: string) =>
    ok<{ balance: number; reserved: number; available: number; fundedBy: string }>(
      "GET",
      `/v1/accounts/balance?accountId=${ref}`,
    );

  const verify = async () => {
    const result = await runCliAsync(["verify"], env);
    expect(result.stdout).toMatch(/verified \d+ accounts, \d+ transactions: OK/);
    expect(result.status).toBe(0);
  };

  it("gives exactly 10 of 200 from a pool of 10, neither member above its cap of 6", async () => {
    const { statuses, winsA, winsB, pool } = await race("ten", 10);
    expect(statuses).toEqual({ 200: 10, 402: 190 });
    expect(winsA + winsB).toBe(10);
    expect(winsA).toBeLessThanOrEqual(6);
    expect(winsB).toBeLessThanOrEqual(6);
    expect(await balanceOf(pool.id)).toMatchObject({ balance: 10, reserved: 10, available: 0 });
    expect(await balanceOf("ten-a")).toMatchObject({ reserved: 10, fundedBy: pool.id });
    await verify();
  });

  it("gives exactly 6 to each member from a pool of 20", async () => {
    const { statuses, winsA, winsB, pool } = await race("twenty", 20);
    expect(statuses).toEqual({ 200: 12, 402: 188 });
    expect([winsA, winsB]).toEqual([6, 6]);
    expect(await balanceOf(pool.id)).toMatchObject({ balance: 20, reserved: 12, available: 8 });
    await verify();
  });
});
