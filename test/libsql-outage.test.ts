/**
 * The remote libSQL server going away (docs/operations.md, "Remote libSQL: sqld or Turso"):
 * while it cannot be reached, requests answer 503 SERVICE_UNAVAILABLE within 5 s and `/ready`
 * answers 503; once it is back, the service serves again without a restart; nothing a 503
 * answered was applied. The server is the Hrana test server in a process of its own, killed
 * (connections refused) or stopped with SIGSTOP (connections accepted, never answered), over
 * HTTP and over WebSocket. Runs once, on the default (embedded) test run.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HranaProcess, spawnHranaServer } from "../scripts/lib/hrana/process.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import type { App } from "../src/http/context.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { type Ledger, openLedger } from "../src/runtime.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError } from "./contract.ts";
import { okBody, type Send, sendJson } from "./http-client.ts";
import { TEST_TARGET } from "./pg-harness.ts";

const TOKEN = `outage_${randomBytes(8).toString("hex")}`;

describe.runIf(TEST_TARGET === "sqlite").each(["http", "ws"] as const)(
  "remote libSQL over %s going away and coming back",
  (scheme) => {
    let dir: string;
    let server: HranaProcess;
    let ledger: Ledger;
    let app: App;
    let key: string;
    const deductions = { ok: 0 };

    const startServer = async (port = 0) => {
      server = await spawnHranaServer({ path: join(dir, "remote.db"), token: TOKEN, port });
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "ledger-libsql-outage-"));
      await startServer();
      ledger = await openLedger(
        loadConfig({
          DATABASE_URL: server.url.replace(/^http/, scheme),
          DATABASE_AUTH_TOKEN: TOKEN,
        }),
      );
      app = createApp(ledger.deps);
      key = (await createProjectKey(ledger.queue, "outage")).apiKey;
      expect((await post("/v1/accounts/create", { externalId: "o1" })).status).toBe(200);
      const funded = await post("/v1/accounts/credits/add", { accountId: "o1", amount: 100 });
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
      const r = await post("/v1/accounts/credits/deduct", { accountId: "o1", amount: 1 }, idemKey);
      if (r.status === 200) deductions.ok++;
      return r;
    };

    /** While the server is away: every kind of request is a quick 503. */
    async function expectUnavailable() {
      for (const r of [
        await deduct(),
        await deduct(`away-${randomBytes(4).toString("hex")}`),
        await request("GET", "/v1/accounts/balance?externalId=o1"),
        await request("GET", "/ready"),
      ]) {
        expect(r.status).toBe(503);
        expect(r.seconds).toBeLessThan(5);
        if (typeof r.body === "object" && r.body !== null && "error" in r.body) {
          expectError(r, 503, "SERVICE_UNAVAILABLE");
        }
      }
    }

    /** Polls until a deduction succeeds again. @returns seconds it took */
    async function recovery(): Promise<number> {
      const started = performance.now();
      while (performance.now() - started < 30_000) {
        if ((await deduct()).status === 200) return (performance.now() - started) / 1000;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error("the service did not recover within 30 s");
    }

    it("answers 503 quickly while the server is down, and recovers once it is back", async () => {
      expect((await deduct()).status).toBe(200);
      const port = server.port;
      await server.kill();
      await expectUnavailable();
      await startServer(port);
      // Contract section 10: writes succeed again within a second of the server taking them.
      expect(await recovery()).toBeLessThan(1);
      expect((await request("GET", "/ready")).status).toBe(200);
    }, 60_000);

    it("answers 503 within 5 s while the server hangs, and recovers", async () => {
      process.kill(server.child.pid ?? 0, "SIGSTOP");
      try {
        await expectUnavailable();
      } finally {
        process.kill(server.child.pid ?? 0, "SIGCONT");
      }
      expect(await recovery()).toBeLessThan(1);
    }, 60_000);

    it("applied exactly the deductions it acknowledged", async () => {
      const view = await request("GET", "/v1/accounts/balance?externalId=o1");
      expect(okBody(accountRoutes.balance, view).balance).toBe(100 - deductions.ok);
      const txs = await request("GET", "/v1/transactions?externalId=o1&limit=500");
      expect(okBody(transactionRoutes.list, txs).pagination.totalCount).toBe(1 + deductions.ok);
      expect((await verifyLedger(ledger.db.read, Date.now())).problems).toEqual([]);
    });
  },
);
