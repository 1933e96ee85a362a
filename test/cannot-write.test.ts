/**
 * A write the database cannot make (docs/design.md, "When the database cannot write"), in
 * process: which errors count as such on each engine; on SQLite every unit of the batch gets the
 * 503 and nothing of the batch is kept, on PostgreSQL only the unit that met it (each unit has
 * its own transaction); `/ready` answers 503 until the probe write succeeds; SQLite's real
 * SQLITE_FULL (a page limit) reaches the caller and the log instead of a failed ROLLBACK; a job
 * that keeps failing logs it once. The same on a real full disk: test/full-disk.test.ts.
 */
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CANNOT_WRITE_MESSAGE,
  CannotWriteError,
  describeDatabaseError,
  isStorageFailure,
} from "../src/db/storage-errors.ts";
import type { UnitRunner } from "../src/db/write-path.ts";
import { startScheduler } from "../src/jobs/scheduler.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { sqliteOnly, TEST_ENGINE } from "./pg-harness.ts";

/** An error as a driver reports it: a message and its code fields. */
function driverError(message: string, fields: Record<string, string>): Error {
  return Object.assign(new Error(message), fields);
}

describe("which errors mean the database cannot write", () => {
  it("SQLite: SQLITE_FULL, SQLITE_IOERR*, SQLITE_READONLY*, from either driver", () => {
    const full = driverError("database or disk is full", { code: "SQLITE_FULL" });
    expect(isStorageFailure(full)).toBe(true);
    expect(isStorageFailure(driverError("disk I/O error", { code: "SQLITE_IOERR_WRITE" }))).toBe(
      true,
    );
    const client = driverError("SQLITE_IOERR: disk I/O error", {
      code: "SQLITE_IOERR",
      extendedCode: "SQLITE_IOERR_FSYNC",
    });
    expect(isStorageFailure(client)).toBe(true);
    expect(isStorageFailure(driverError("readonly", { code: "SQLITE_READONLY" }))).toBe(true);
    for (const code of [
      "SQLITE_BUSY",
      "SQLITE_CONSTRAINT_UNIQUE",
      "SQLITE_ERROR",
      "SQLITE_FULLX",
    ]) {
      expect(isStorageFailure(driverError("other", { code }))).toBe(false);
    }
    expect(describeDatabaseError(full)).toBe("SQLITE_FULL: database or disk is full");
    expect(describeDatabaseError(client)).toBe("SQLITE_IOERR_FSYNC: SQLITE_IOERR: disk I/O error");
  });

  it("PostgreSQL: class 53 but 53300, and 58000/58030; never a conflict or a lost server", () => {
    for (const code of ["53000", "53100", "53200", "53400", "58000", "58030"]) {
      expect(isStorageFailure(driverError("no space", { code }))).toBe(true);
    }
    for (const code of ["53300", "40001", "40P01", "55P03", "23505", "08006", "57P01", "XX000"]) {
      expect(isStorageFailure(driverError("other", { code }))).toBe(false);
    }
    const diskFull = driverError('could not extend file "base/1/2": No space left on device', {
      code: "53100",
    });
    const answer = new CannotWriteError(diskFull);
    expect(answer.status).toBe(503);
    expect(answer.toBody()).toEqual({
      success: false,
      error: { code: "SERVICE_UNAVAILABLE", message: CANNOT_WRITE_MESSAGE },
    });
    expect(answer.message).toContain("cannot write");
    expect(isStorageFailure(answer)).toBe(true);
    expect(describeDatabaseError(answer)).toBe(
      '53100: could not extend file "base/1/2": No space left on device',
    );
  });
});

describe("the write path when the database cannot write", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger();
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  const projectIds = async (prefix: string) =>
    (
      await t.ledger.db.read
        .selectFrom("projects")
        .select("id")
        .where("id", "like", `${prefix}%`)
        .orderBy("id")
        .execute()
    ).map((r) => r.id);

  const ready = async () => (await t.api("GET", "/ready")).status;

  const waitForReady = async () => {
    const deadline = performance.now() + 10_000;
    while ((await ready()) !== 200) {
      if (performance.now() > deadline) throw new Error("/ready did not come back");
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it("fails the unit's batch (SQLite) or the unit (PostgreSQL) with 503; /ready until a probe writes", async () => {
    const diskFull = driverError("could not write: no space", {
      code: TEST_ENGINE === "postgres" ? "53100" : "SQLITE_FULL",
    });
    const unit = (id: string, fail = false) =>
      t.ledger.queue.run(async (trx, nowMs) => {
        await trx.insertInto("projects").values({ id, name: id, created_at_ms: nowMs }).execute();
        if (fail) throw diskFull;
        return id;
      });
    expect(await ready()).toBe(200);
    const results = await Promise.allSettled([unit("cw-0"), unit("cw-1", true), unit("cw-2")]);
    const reasons = results.map((r) => (r.status === "rejected" ? r.reason : undefined));
    expect(reasons[1]).toBeInstanceOf(CannotWriteError);
    expect((reasons[1] as CannotWriteError).cause).toBe(diskFull);
    if (TEST_ENGINE === "sqlite") {
      // One batch: every unit gets the 503, and none of them is kept.
      for (const reason of reasons) expect(reason).toBeInstanceOf(CannotWriteError);
      expect(await projectIds("cw-")).toEqual([]);
    } else {
      expect(reasons[0]).toBeUndefined();
      expect(reasons[2]).toBeUndefined();
      expect(await projectIds("cw-")).toEqual(["cw-0", "cw-2"]);
    }
    expect(t.ledger.queue.health.failure).toMatchObject({ failures: 1 });
    expect(t.ledger.queue.health.failure?.error).toBe(describeDatabaseError(diskFull));
    const answer = await t.api("GET", "/ready");
    expect(answer).toMatchObject({ status: 503, body: { status: "unavailable" } });
    // No traffic: the probe's own write ends it.
    await waitForReady();
    expect(t.ledger.queue.health.failure).toBeUndefined();
    await expect(unit("cw-3")).resolves.toBe("cw-3");
  });

  it.runIf(sqliteOnly)(
    "SQLite: a real SQLITE_FULL is the 503, not a failed rollback, and nothing is kept",
    async () => {
      await fundedAccount(t, "a", 10);
      const write = t.ledger.db.write;
      const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(write);
      const limit = Number(pages.rows[0]?.page_count);
      // The database may not grow: a write that needs new pages fails with SQLITE_FULL.
      await sql.raw(`PRAGMA max_page_count = ${limit}`).execute(write);
      const big = "x".repeat(200_000);
      const results = await Promise.allSettled([
        t.ledger.queue.run(async (trx, nowMs) => {
          await trx
            .insertInto("projects")
            .values({ id: "pf-0", name: "pf-0", created_at_ms: nowMs })
            .execute();
        }),
        t.ledger.queue.run(async (trx, nowMs) => {
          await trx
            .insertInto("projects")
            .values({ id: "pf-1", name: big, created_at_ms: nowMs })
            .execute();
        }),
      ]);
      for (const r of results) {
        expect(r.status).toBe("rejected");
        const reason = r.status === "rejected" ? r.reason : undefined;
        expect(reason).toBeInstanceOf(CannotWriteError);
        expect(describeDatabaseError(reason)).toMatch(/^SQLITE_FULL: /);
      }
      expect(await projectIds("pf-")).toEqual([]);
      // Over HTTP: credits added until the pages there are hold no more; then the 503 with its
      // message, and nothing of the refused request kept.
      let acknowledged = 0;
      let refused: { status: number; body: unknown } | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        const res = await t.api("POST", "/v1/accounts/credits/add", {
          body: { accountId: "a", amount: 1, description: `${i}`.padEnd(1000, "d") },
          headers: { "Idempotency-Key": `full-${i}` },
        });
        if (res.status === 200) acknowledged++;
        else refused = { status: res.status, body: res.body };
      }
      expect(refused).toEqual({
        status: 503,
        body: {
          success: false,
          error: { code: "SERVICE_UNAVAILABLE", message: CANNOT_WRITE_MESSAGE },
        },
      });
      expect(await ready()).toBe(503);
      expect(t.ledger.queue.health.failure?.error).toMatch(/^SQLITE_FULL: /);
      await sql.raw("PRAGMA max_page_count = 4294967294").execute(write);
      await waitForReady();
      // The retry with the refused request's key applies it, once.
      const retried = {
        body: { accountId: "a", amount: 1, description: `${acknowledged}`.padEnd(1000, "d") },
        headers: { "Idempotency-Key": `full-${acknowledged}` },
      };
      const first = await t.call(ledgerRoutes.add, retried);
      const again = await t.call(ledgerRoutes.add, retried);
      expect(again.transactionId).toBe(first.transactionId);
      expect(first.balance).toBe(10 + acknowledged + 1);
    },
  );
});

describe("a job that keeps failing", () => {
  it("logs the failure once, the repeats at debug, and its recovery once", async () => {
    const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
    const log = (level: string) => (obj: object, msg?: string) =>
      lines.push({ level, msg: msg ?? "", obj: { ...obj } });
    const full = () =>
      new CannotWriteError(driverError("database or disk is full", { code: "SQLITE_FULL" }));
    // What the next unit meets: the error it fails with, or none (it runs on a real ledger).
    let outcome: (() => Error) | undefined = full;
    // The write path's episode, as the jobs see it.
    const health: { failure: { sinceMs: number } | undefined } = { failure: { sinceMs: 1 } };
    const t = await makeLedger();
    const queue: UnitRunner = {
      run: (unit) => (outcome ? Promise.reject(outcome()) : t.ledger.queue.run(unit)),
      health,
    };
    const never = "0 0 0 1 1 *";
    const scheduler = startScheduler({
      queue,
      clock: Date.now,
      logger: { info: log("info"), warn: log("warn"), error: log("error"), debug: log("debug") },
      expireCron: never,
      grantCron: never,
      retentionCron: never,
      webhookRetentionDays: 30,
    });
    const run = () => scheduler.runNow("purge-idempotency-keys");
    const levels = (msg: string) => lines.filter((l) => l.msg === msg).map((l) => l.level);
    try {
      for (let i = 0; i < 3; i++) await run();
      expect(levels("job failed")).toEqual(["error", "debug", "debug"]);
      expect(lines[0]?.obj.err).toBe("SQLITE_FULL: database or disk is full");
      // A run with nothing to write succeeds while the database still cannot write: no news.
      outcome = undefined;
      await run();
      outcome = full;
      await run();
      expect(levels("job failed")).toEqual(["error", "debug", "debug", "debug"]);
      expect(levels("job recovered")).toEqual([]);
      // Another kind of error is news: logged at error again.
      outcome = () => new Error("something else");
      await run();
      expect(lines.at(-1)).toMatchObject({ level: "error", msg: "job failed" });
      // The database writes again; the job's next success is its recovery, logged once.
      health.failure = undefined;
      outcome = undefined;
      await run();
      await run();
      expect(lines.filter((l) => l.msg === "job recovered")).toEqual([
        {
          level: "info",
          msg: "job recovered",
          obj: { job: "purge-idempotency-keys", failedRuns: 5 },
        },
      ]);
      // A new episode of the write path is news again.
      health.failure = { sinceMs: 2 };
      outcome = full;
      await run();
      await run();
      expect(levels("job failed")).toEqual([
        "error",
        "debug",
        "debug",
        "debug",
        "error",
        "error",
        "debug",
      ]);
    } finally {
      scheduler.stop();
      await t.close();
    }
  });
});
