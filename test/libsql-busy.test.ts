/**
 * A remote libSQL server that is busy or hung (contract section 10; docs/operations.md, "Remote
 * libSQL: sqld or Turso"): while another client holds the server's write lock, or the server is
 * stopped with SIGSTOP, deductions answer 200 or 503 `SERVICE_UNAVAILABLE` within 5 s, never a
 * 500, `/ready` answers 503; writes succeed again within about a second of the server taking
 * them; the balance counts exactly the acknowledged deductions. The server is the Hrana test
 * server in a process of its own; the lock is held through Hrana by a second `@libsql/client`,
 * and by a second SQLite connection on the server's file. Over HTTP and over WebSocket. Runs
 * once, on the default (embedded) test run.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import LibsqlDatabase from "libsql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HranaProcess, spawnHranaServer } from "../scripts/lib/hrana/process.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey, revokeKey } from "../src/db/api-keys.ts";
import type { App } from "../src/http/context.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { type Ledger, openLedger } from "../src/runtime.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError } from "./contract.ts";
import { okBody, type Send, sendJson } from "./http-client.ts";
import { TEST_TARGET } from "./pg-harness.ts";

const TOKEN = `busy_${randomBytes(8).toString("hex")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long the second client holds the write lock, and how long the server hangs. */
const HOLD_MS = 9000;
const HANG_MS = 10_000;

describe.runIf(TEST_TARGET === "sqlite").each(["http", "ws"] as const)(
  "remote libSQL over %s, busy or hung",
  (scheme) => {
    let dir: string;
    let server: HranaProcess;
    let ledger: Ledger;
    let app: App;
    let key: string;
    let acknowledged = 0;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "ledger-libsql-busy-"));
      server = await spawnHranaServer({
        path: join(dir, "remote.db"),
        token: TOKEN,
        idleSeconds: 30,
      });
      ledger = await openLedger(
        loadConfig({
          DATABASE_URL: server.url.replace(/^http/, scheme),
          DATABASE_AUTH_TOKEN: TOKEN,
        }),
      );
      app = createApp(ledger.deps);
      key = (await createProjectKey(ledger.queue, "busy")).apiKey;
      expect((await post("/v1/accounts/create", { externalId: "b1" })).status).toBe(200);
      const funded = await post("/v1/accounts/credits/add", { accountId: "b1", amount: 1000 });
      expect(funded.status).toBe(200);
    });
    afterAll(async () => {
      if (server.child.signalCode === null) process.kill(server.child.pid ?? 0, "SIGCONT");
      await ledger.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const request = async (method: string, path: string, body?: unknown, idemKey?: string) => {
      const started = performance.now();
      const send: Send = async (p, init) => app.request(p, init);
      const reply = await sendJson(send, key, method, path, { body, idempotencyKey: idemKey });
      return { ...reply, seconds: (performance.now() - started) / 1000 };
    };
    const post = (path: string, body: unknown, idemKey?: string) =>
      request("POST", path, body, idemKey);
    const deduct = async (idemKey?: string) => {
      const r = await post("/v1/accounts/credits/deduct", { accountId: "b1", amount: 1 }, idemKey);
      if (r.status === 200) acknowledged++;
      return r;
    };

    /**
     * Five deductions started 0.8 s apart while the write lock is held (alternately with and
     * without an Idempotency-Key), and `/ready` once they are answered.
     * @returns the deductions' answers and `/ready`'s status
     */
    async function deductWhileBlocked() {
      const pending = [];
      for (let i = 0; i < 5; i++) {
        pending.push(deduct(i % 2 === 0 ? undefined : `busy-${randomBytes(4).toString("hex")}`));
        await sleep(800);
      }
      const answers = await Promise.all(pending);
      const ready = await request("GET", "/ready");
      return { answers, ready: ready.status };
    }

    /** Each answer is a 200, or a 503 SERVICE_UNAVAILABLE, within 5 s. */
    function expectQuickAnswers(answers: Awaited<ReturnType<typeof deduct>>[]) {
      for (const r of answers) {
        expect(r.seconds).toBeLessThan(5);
        if (r.status !== 200) expectError(r, 503, "SERVICE_UNAVAILABLE");
      }
      console.log(
        `${scheme}, 9 s hold: ${answers.map((r) => `${r.status} in ${r.seconds.toFixed(2)} s`).join(", ")}`,
      );
    }

    it.each([
      ["another Hrana client", "hrana"],
      ["a SQLite connection on the server's file", "sqlite"],
    ] as const)(
      "answers 200 or 503 within 5 s while %s holds the write lock for 9 s",
      async (_, by) => {
        expect((await deduct()).status).toBe(200);
        const release = await holdWriteLock(by);
        const held = performance.now();
        let blocked: Awaited<ReturnType<typeof deductWhileBlocked>>;
        try {
          blocked = await deductWhileBlocked();
          await sleep(HOLD_MS - (performance.now() - held));
        } finally {
          await release();
        }
        const after = await deduct();
        expectQuickAnswers(blocked.answers);
        expect(blocked.answers.some((r) => r.status === 503)).toBe(true);
        expect(blocked.ready).toBe(503);
        expect(after.status).toBe(200);
        console.log(
          `${scheme}, ${by}: first deduction after the release: ${after.seconds.toFixed(2)} s`,
        );
        expect((await request("GET", "/ready")).status).toBe(200);
      },
      60_000,
    );

    it("retries a unit alone and units in a batch alike while the lock is held briefly", async () => {
      for (const holder of ["hrana", "sqlite"] as const) {
        const release = await holdWriteLock(holder);
        const alone = deduct();
        await sleep(50);
        const together = [deduct(), deduct(), deduct(), deduct()];
        await sleep(1500);
        await release();
        const answers = await Promise.all([alone, ...together]);
        console.log(
          `${scheme}, ${holder} held 1.5 s: ${answers.map((r) => `${r.status} in ${r.seconds.toFixed(2)} s`).join(", ")}`,
        );
        for (const r of answers) {
          expect(r.status).toBe(200);
          expect(r.seconds).toBeLessThan(5);
        }
      }
    }, 60_000);

    /**
     * Takes the server's write lock from a second client: through Hrana, or with a SQLite
     * connection of its own on the server's file. @returns what lets go of it
     */
    async function holdWriteLock(by: "hrana" | "sqlite"): Promise<() => Promise<void>> {
      if (by === "sqlite") {
        const conn = new LibsqlDatabase(join(dir, "remote.db"));
        conn.exec("BEGIN IMMEDIATE");
        return async () => {
          conn.exec("ROLLBACK");
          conn.close();
        };
      }
      const holder = createClient({ url: server.url, authToken: TOKEN });
      const tx = await holder.transaction("write");
      await tx.execute("SELECT 1");
      return async () => {
        await tx.rollback();
        holder.close();
      };
    }

    it("writes again within about a second of a 10 s hang ending", async () => {
      expect((await deduct()).status).toBe(200);
      const pid = server.child.pid ?? 0;
      process.kill(pid, "SIGSTOP");
      const answers = [];
      try {
        const stopped = performance.now();
        while (performance.now() - stopped < HANG_MS - 1000) {
          answers.push(deduct(), request("GET", "/ready"));
          await sleep(1000);
        }
        await sleep(HANG_MS - (performance.now() - stopped));
      } finally {
        process.kill(pid, "SIGCONT");
      }
      const resumed = performance.now();
      let recovery = Number.POSITIVE_INFINITY;
      while (performance.now() - resumed < 15_000) {
        if ((await deduct()).status === 200) {
          recovery = (performance.now() - resumed) / 1000;
          break;
        }
        await sleep(50);
      }
      console.log(`${scheme}: writes again ${recovery.toFixed(2)} s after the hang ended`);
      const settled = await Promise.all(answers);
      for (const r of settled) {
        expect([200, 503]).toContain(r.status);
        expect(r.seconds).toBeLessThan(5);
      }
      // The first deduction and `/ready` were asked as the server stopped: both gave up.
      expect(settled.slice(0, 2).map((r) => r.status)).toEqual([503, 503]);
      expect(recovery).toBeLessThan(1);
      expect((await request("GET", "/ready")).status).toBe(200);
    }, 60_000);

    it("applied exactly the deductions it acknowledged", async () => {
      const view = await request("GET", "/v1/accounts/balance?externalId=b1");
      expect(okBody(accountRoutes.balance, view).balance).toBe(1000 - acknowledged);
      const txs = await request("GET", "/v1/transactions?externalId=b1&limit=500");
      expect(okBody(transactionRoutes.list, txs).pagination.totalCount).toBe(1 + acknowledged);
      expect((await verifyLedger(ledger.db.read, Date.now())).problems).toEqual([]);
    });
  },
);

/**
 * What a deduction costs over HTTP, counted as the server's pipeline requests (each one round
 * trip), with the API key remembered (`KEY_TRUST_MS`) and read again: the figures of
 * docs/operations.md, "Remote libSQL: sqld or Turso" ("Cost per request").
 */
describe.runIf(TEST_TARGET === "sqlite")("round trips of a deduction over HTTP", () => {
  let dir: string;
  let server: HranaProcess;
  let ledger: Ledger;
  let app: App;
  let key: string;
  let logFile: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-libsql-trips-"));
    logFile = join(dir, "server.log");
    server = await spawnHranaServer({ path: join(dir, "remote.db"), token: TOKEN, logFile });
    ledger = await openLedger(loadConfig({ DATABASE_URL: server.url, DATABASE_AUTH_TOKEN: TOKEN }));
    app = createApp(ledger.deps);
    key = (await createProjectKey(ledger.queue, "trips")).apiKey;
    const send: Send = async (p, init) => app.request(p, init);
    const create = await sendJson(send, key, "POST", "/v1/accounts/create", {
      body: { externalId: "t1" },
    });
    expect(create.status).toBe(200);
    const add = { body: { accountId: "t1", amount: 1000 } };
    expect((await sendJson(send, key, "POST", "/v1/accounts/credits/add", add)).status).toBe(200);
  });
  afterAll(async () => {
    await ledger.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const pipelines = () =>
    readFileSync(logFile, "utf8")
      .split("\n")
      .filter((line) => line.includes('"event":"pipeline"')).length;

  /** @returns the pipelines one deduction made */
  async function tripsOfDeduction(options: { idempotencyKey?: string; coldKey: boolean }) {
    const send: Send = async (p, init) => app.request(p, init);
    if (options.coldKey) {
      // A revocation by this process makes the key check read the key again.
      const spare = await createProjectKey(ledger.queue, "spare");
      await revokeKey(ledger.queue, spare.keyId);
    }
    const before = pipelines();
    const r = await sendJson(send, key, "POST", "/v1/accounts/credits/deduct", {
      body: { accountId: "t1", amount: 1 },
      ...(options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}),
    });
    expect(r.status).toBe(200);
    return pipelines() - before;
  }

  it("makes the round trips the docs say", async () => {
    const idem = () => `trip-${randomBytes(4).toString("hex")}`;
    const trips = {
      plain: await tripsOfDeduction({ coldKey: false }),
      keyed: await tripsOfDeduction({ coldKey: false, idempotencyKey: idem() }),
      plainColdKey: await tripsOfDeduction({ coldKey: true }),
      keyedColdKey: await tripsOfDeduction({ coldKey: true, idempotencyKey: idem() }),
    };
    console.log(`round trips of a deduction over HTTP: ${JSON.stringify(trips)}`);
    expect(trips).toEqual({ plain: 4, keyed: 6, plainColdKey: 5, keyedColdKey: 7 });
  });
});
