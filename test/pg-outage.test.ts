/**
 * The database going away (docs/operations.md, "PostgreSQL and several servers"): while
 * PostgreSQL cannot be reached, requests answer 503 SERVICE_UNAVAILABLE within 5 s and `/ready`
 * answers 503; once it is back, the service serves again within 30 s without a restart; nothing
 * a 503 answered was applied. The service reaches PostgreSQL through a TCP proxy in this test,
 * which refuses connections (a restart) or swallows traffic (a network that drops packets),
 * so the shared test cluster keeps serving the other test files. PostgreSQL only.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import type { App } from "../src/http/context.ts";
import { type Ledger, openLedger } from "../src/runtime.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError } from "./contract.ts";
import { okBody, type Send, sendJson } from "./http-client.ts";
import { createPgDatabase, TEST_ENGINE } from "./pg-harness.ts";

/** A TCP proxy to `target` that can refuse, swallow or forward connections. */
class TcpProxy {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  mode: "forward" | "swallow" = "forward";
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(): Promise<void> {
    const server = createServer((client) => {
      this.#sockets.add(client);
      client.on("close", () => this.#sockets.delete(client));
      client.on("error", () => {});
      if (this.mode === "swallow") return; // accepted, never answered
      const upstream = tcpConnect(this.target.port, this.target.host);
      this.#sockets.add(upstream);
      upstream.on("close", () => this.#sockets.delete(upstream));
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      client.on("data", (d) => {
        if (this.mode === "forward") upstream.write(d);
      });
      upstream.on("data", (d) => {
        if (this.mode === "forward") client.write(d);
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    const address = server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
  }

  /** Closes every connection and refuses new ones (a database restarting). */
  async refuse(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve());
    this.#server = undefined;
  }
}

describe.runIf(TEST_ENGINE === "postgres")("PostgreSQL going away and coming back", () => {
  let proxy: TcpProxy;
  let database: { url: string; drop: () => Promise<void> };
  let ledger: Ledger;
  let app: App;
  let key: string;
  const deductions = { ok: 0 };

  beforeAll(async () => {
    database = await createPgDatabase();
    const direct = new URL(database.url);
    proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port) });
    await proxy.listen();
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    ledger = await openLedger(loadConfig({ DATABASE_URL: viaProxy.toString() }));
    app = createApp(ledger.deps);
    key = (await createProjectKey(ledger.queue, "outage")).apiKey;
    expect((await post("/v1/accounts/create", { externalId: "o1" })).status).toBe(200);
    expect((await post("/v1/accounts/credits/add", { accountId: "o1", amount: 100 })).status).toBe(
      200,
    );
  });
  afterAll(async () => {
    await ledger.close();
    await proxy.refuse();
    await database.drop();
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

  /** While the database is away: every kind of request is a quick 503. */
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
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error("the service did not recover within 30 s");
  }

  it("answers 503 quickly while connections are refused, and recovers by itself", async () => {
    expect((await deduct()).status).toBe(200);
    await proxy.refuse();
    await expectUnavailable();
    await proxy.listen();
    expect(await recovery()).toBeLessThan(30);
    expect((await request("GET", "/ready")).status).toBe(200);
  }, 60_000);

  it("answers 503 within 5 s while the network swallows every packet, and recovers", async () => {
    proxy.mode = "swallow";
    await expectUnavailable();
    proxy.mode = "forward";
    expect(await recovery()).toBeLessThan(30);
  }, 60_000);

  it("applied exactly the deductions it acknowledged", async () => {
    const view = await request("GET", "/v1/accounts/balance?externalId=o1");
    expect(okBody(accountRoutes.balance, view).balance).toBe(100 - deductions.ok);
    const txs = await request("GET", "/v1/transactions?externalId=o1&limit=500");
    expect(okBody(transactionRoutes.list, txs).pagination.totalCount).toBe(1 + deductions.ok);
  });
});
