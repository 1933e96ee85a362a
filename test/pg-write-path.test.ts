/**
 * PostgreSQL's write path (src/db/pg-write-path.ts; docs/design.md, "Engines"): conflicts
 * between transactions are retried a bounded number of times and never answer 500; when the
 * retries run out the caller gets 503 SERVICE_UNAVAILABLE and nothing was applied; a real
 * deadlock and a lock held elsewhere end the same way. PostgreSQL only.
 */
import { sql } from "kysely";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { MAX_ATTEMPTS } from "../src/db/pg-write-path.ts";
import { ApiError } from "../src/errors.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { TEST_ENGINE } from "./pg-harness.ts";

/** An error as node-postgres reports a SQLSTATE. */
function pgError(code: string): Error {
  return Object.assign(new Error(`simulated ${code}`), { code });
}

describe.runIf(TEST_ENGINE === "postgres")("PostgreSQL write path", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger();
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  const projectNames = async (prefix: string) =>
    (
      await t.ledger.db.read
        .selectFrom("projects")
        .select("name")
        .where("name", "like", `${prefix}%`)
        .execute()
    ).map((r) => r.name);

  it("retries a unit that meets serialization failures, deadlocks and lock timeouts", async () => {
    let attempts = 0;
    const result = await t.ledger.queue.run(async (trx, nowMs) => {
      attempts++;
      await trx
        .insertInto("projects")
        .values({ id: `prj_retry_${attempts}`, name: `retry-${attempts}`, created_at_ms: nowMs })
        .execute();
      if (attempts <= 3) throw pgError(["40001", "40P01", "55P03"][attempts - 1] ?? "");
      return "done";
    });
    expect(result).toBe("done");
    expect(attempts).toBe(4);
    // Only the attempt that committed left its row.
    expect(await projectNames("retry-")).toEqual(["retry-4"]);
  });

  it("answers 503 and applies nothing when conflicts outlast the retries", async () => {
    let attempts = 0;
    const run = t.ledger.queue.run(async (trx, nowMs) => {
      attempts++;
      await trx
        .insertInto("projects")
        .values({ id: `prj_busy_${attempts}`, name: `busy-${attempts}`, created_at_ms: nowMs })
        .execute();
      throw pgError("40001");
    });
    const err = await run.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe("SERVICE_UNAVAILABLE");
    expect((err as ApiError).status).toBe(503);
    expect(attempts).toBeGreaterThan(1);
    expect(attempts).toBeLessThanOrEqual(MAX_ATTEMPTS);
    expect(await projectNames("busy-")).toEqual([]);
  });

  it("passes a unit's own refusal through at once, without retrying it", async () => {
    let attempts = 0;
    const err = await t.ledger.queue
      .run(async () => {
        attempts++;
        throw new ApiError("INSUFFICIENT_CREDITS", "no");
      })
      .catch((e: unknown) => e);
    expect((err as ApiError).code).toBe("INSUFFICIENT_CREDITS");
    expect(attempts).toBe(1);
  });

  it("resolves a real deadlock between two units by retrying the one PostgreSQL aborts", async () => {
    const a = await fundedAccount(t, "a", 10);
    const b = await fundedAccount(t, "b", 10);
    let arrived = 0;
    let release: () => void = () => {};
    const bothLocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const lockBoth = (first: string, second: string) =>
      t.ledger.queue.run(async (trx) => {
        const lock = (id: string) =>
          trx.selectFrom("accounts").select("id").where("id", "=", id).forUpdate().execute();
        await lock(first);
        // The first attempts of both units meet here, each holding one lock; retries pass.
        if (++arrived === 2) release();
        await Promise.race([bothLocked, new Promise((r) => setTimeout(r, 3000))]);
        await lock(second);
        return first;
      });
    const results = await Promise.all([lockBoth(a, b), lockBoth(b, a)]);
    expect(results).toEqual([a, b]);
  }, 20_000);

  it("answers 503 within 5 s, changing nothing, while another session holds the account", async () => {
    const id = await fundedAccount(t, "held", 10);
    const other = new pg.Client({ connectionString: t.databaseUrl });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE", [id]);
      const started = performance.now();
      await t.fail(
        ledgerRoutes.deduct,
        { body: { accountId: "held", amount: 1 } },
        503,
        "SERVICE_UNAVAILABLE",
      );
      const seconds = (performance.now() - started) / 1000;
      expect(seconds).toBeLessThan(5.5);
      await other.query("ROLLBACK");
    } finally {
      await other.end();
    }
    const view = await t.call(accountRoutes.balance, { query: { externalId: "held" } });
    expect(view.balance).toBe(10);
    const txs = await t.call(transactionRoutes.list, { query: { externalId: "held" } });
    expect(txs.pagination.totalCount).toBe(1);
  }, 20_000);

  it("reads BIGINT counts as numbers and stores every amount exactly", async () => {
    const rows = await sql<{ n: unknown }>`SELECT count(*) AS n FROM projects`.execute(
      t.ledger.db.read,
    );
    expect(typeof rows.rows[0]?.n).toBe("number");
    await fundedAccount(t, "big");
    for (let i = 0; i < 9; i++) {
      const add = await t.api("POST", "/v1/accounts/credits/add", {
        body: { accountId: "big", amount: 999_999_999.999999 },
      });
      expect(add.status).toBe(200);
    }
    const row = await t.ledger.db.read
      .selectFrom("accounts")
      .select("balance_micros")
      .where("external_id", "=", "big")
      .executeTakeFirstOrThrow();
    expect(row.balance_micros).toBe(8_999_999_999_999_991);
  });
});
