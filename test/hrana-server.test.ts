/**
 * The Hrana test server (scripts/lib/hrana/) against the real `@libsql/client`, over HTTP and
 * WebSocket: what the service's remote mode relies on (docs/operations.md, "The Hrana test
 * server"). Runs once, whatever the test engine.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HranaServer, startHranaServer } from "../scripts/lib/hrana/server.ts";
import { TEST_TARGET } from "./pg-harness.ts";

const TOKEN = "test-token-0123456789";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(TEST_TARGET === "sqlite")("Hrana test server", () => {
  let dir: string;
  let server: HranaServer;
  const clients: Client[] = [];
  const client = (scheme: "http" | "ws", authToken: string | null = TOKEN) => {
    const c = createClient({
      url: server.url.replace(/^http/, scheme),
      authToken: authToken ?? undefined,
      intMode: "bigint",
    });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hrana-test-"));
    server = await startHranaServer({
      path: join(dir, "db.sqlite"),
      token: TOKEN,
      idleSeconds: 0.4,
      lockTimeoutMs: 5000,
    });
    await client("http").batch(
      [
        "CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BLOB)",
        "CREATE TABLE audit (item INTEGER)",
        "CREATE TRIGGER items_audit AFTER INSERT ON items BEGIN INSERT INTO audit VALUES (new.id); INSERT INTO audit VALUES (-new.id); END",
        "CREATE TRIGGER items_audit_u AFTER UPDATE ON items BEGIN INSERT INTO audit VALUES (0); END",
        "CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO counter VALUES (1, 0)",
      ],
      "write",
    );
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe.each(["http", "ws"] as const)("over %s", (scheme) => {
    // Each variant writes its own ids into the one database.
    const id = (n: number) => (scheme === "http" ? n : n + 100_000);
    it("executes with typed values, column names and declared types", async () => {
      const c = client(scheme);
      const big = 9_007_199_254_740_993n; // 2^53 + 1: survives only as a decimal string
      const inserted = await c.execute({
        sql: "INSERT INTO items (n, r, s, b) VALUES (?, ?, ?, ?)",
        args: [big, 0.25, "é\u{1F600}", new Uint8Array([0, 255, 7])],
      });
      expect(inserted.rowsAffected).toBe(1);
      const id = inserted.lastInsertRowid;
      expect(typeof id).toBe("bigint");
      const read = await c.execute({
        sql: "SELECT id, n, r, s, b, NULL AS z, n + 1 AS expr FROM items WHERE id = ?",
        args: [id ?? 0n],
      });
      expect(read.columns).toEqual(["id", "n", "r", "s", "b", "z", "expr"]);
      expect(read.columnTypes).toEqual(["INTEGER", "INTEGER", "REAL", "TEXT", "BLOB", "", ""]);
      const row = read.rows[0];
      expect(row?.n).toBe(big);
      expect(row?.expr).toBe(big + 1n);
      expect(row?.r).toBe(0.25);
      expect(row?.s).toBe("é\u{1F600}");
      expect(new Uint8Array(row?.b as ArrayBuffer)).toEqual(new Uint8Array([0, 255, 7]));
      expect(row?.z).toBeNull();
      expect(read.rowsAffected).toBe(0);
    });

    it("counts the rows a statement changed itself, not those of its triggers", async () => {
      const c = client(scheme);
      const before = await c.execute("SELECT count(*) AS n FROM audit");
      const inserted = await c.execute("INSERT INTO items (n) VALUES (1), (2)");
      expect(inserted.rowsAffected).toBe(2);
      const audit = await c.execute("SELECT count(*) AS n FROM audit");
      expect(audit.rows[0]?.n).toBe((before.rows[0]?.n as bigint) + 4n);
      const updated = await c.execute("UPDATE items SET n = n WHERE n IN (1, 2)");
      expect(updated.rowsAffected).toBeGreaterThanOrEqual(2);
      expect(updated.rowsAffected).toBe(
        Number((await c.execute("SELECT count(*) AS n FROM items WHERE n IN (1, 2)")).rows[0]?.n),
      );
      // A SELECT after a write reports no changed rows (sqld does the same).
      expect((await c.execute("SELECT 1")).rowsAffected).toBe(0);
      expect((await c.execute("UPDATE items SET n = n WHERE 0")).rowsAffected).toBe(0);
    });

    it("runs a write batch all or nothing", async () => {
      const c = client(scheme);
      const results = await c.batch(
        [
          `INSERT INTO items (id, s) VALUES (${id(1000)}, 'a')`,
          `SELECT s FROM items WHERE id = ${id(1000)}`,
        ],
        "write",
      );
      expect(results[1]?.rows[0]?.s).toBe("a");
      await expect(
        c.batch(
          [
            `INSERT INTO items (id, s) VALUES (${id(1001)}, 'b')`,
            `INSERT INTO items (id, s) VALUES (${id(1000)}, 'duplicate')`,
          ],
          "write",
        ),
      ).rejects.toThrow(/UNIQUE constraint failed/);
      const left = await c.execute(`SELECT id FROM items WHERE id IN (${id(1000)}, ${id(1001)})`);
      expect(left.rows.map((r) => r.id)).toEqual([BigInt(id(1000))]);
    });

    it("keeps an interactive transaction on its stream, and rolls it back", async () => {
      const c = client(scheme);
      const other = client(scheme);
      const tx = await c.transaction("write");
      await tx.execute(`INSERT INTO items (id, s) VALUES (${id(2000)}, 'tx')`);
      const inside = await tx.execute(`SELECT s FROM items WHERE id = ${id(2000)}`);
      expect(inside.rows[0]?.s).toBe("tx");
      // Not visible outside before the commit.
      expect((await other.execute(`SELECT s FROM items WHERE id = ${id(2000)}`)).rows).toEqual([]);
      await tx.commit();
      expect((await other.execute(`SELECT s FROM items WHERE id = ${id(2000)}`)).rows[0]?.s).toBe(
        "tx",
      );

      const rolled = await c.transaction("write");
      await rolled.execute(`INSERT INTO items (id, s) VALUES (${id(2001)}, 'gone')`);
      await rolled.rollback();
      expect((await other.execute(`SELECT id FROM items WHERE id = ${id(2001)}`)).rows).toEqual([]);
    });

    it("makes overlapping write transactions wait for each other, and commits both", async () => {
      const a = client(scheme);
      const b = client(scheme);
      const increment = async (c: Client, holdMs: number) => {
        const tx = await c.transaction("write");
        const read = await tx.execute("SELECT value FROM counter WHERE id = 1");
        await sleep(holdMs);
        await tx.execute({
          sql: "UPDATE counter SET value = ? WHERE id = 1",
          args: [(read.rows[0]?.value as bigint) + 1n],
        });
        await tx.commit();
        return performance.now();
      };
      const start = (await a.execute("SELECT value FROM counter WHERE id = 1")).rows[0]?.value;
      const first = increment(a, 300);
      await sleep(50);
      const started = performance.now();
      const [doneA, doneB] = await Promise.all([first, increment(b, 0)]);
      // B's BEGIN IMMEDIATE waited for A's commit: no lost update, no SQLITE_BUSY.
      expect(doneB).toBeGreaterThan(doneA);
      expect(doneB - started).toBeGreaterThan(200);
      const end = (await a.execute("SELECT value FROM counter WHERE id = 1")).rows[0]?.value;
      expect(end).toBe((start as bigint) + 2n);
    });

    it("refuses a wrong token, and a missing one", async () => {
      await expect(client(scheme, "wrong").execute("SELECT 1")).rejects.toThrow(/Unauthorized/i);
      await expect(client(scheme, null).execute("SELECT 1")).rejects.toThrow(/Unauthorized/i);
    });
  });

  it("closes an idle stream: its transaction is rolled back and the write lock freed", async () => {
    const c = client("http");
    const tx = await c.transaction("write");
    await tx.execute("INSERT INTO items (id, s) VALUES (3000, 'abandoned')");
    expect(server.openStreams()).toBeGreaterThan(0);
    await sleep(1200);
    await expect(tx.commit()).rejects.toThrow(/baton|expired/i);
    const other = client("http");
    const started = performance.now();
    await other.execute("INSERT INTO items (id, s) VALUES (3001, 'next')");
    expect(performance.now() - started).toBeLessThan(1000);
    const rows = await other.execute("SELECT id FROM items WHERE id IN (3000, 3001)");
    expect(rows.rows.map((r) => r.id)).toEqual([3001n]);
  });

  it("answers the raw pipeline requests: store_sql, sequence, get_autocommit, describe, batons", async () => {
    const post = async (body: unknown) => {
      const res = await fetch(`${server.url}/v2/pipeline`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const opened = await post({
      baton: null,
      requests: [
        { type: "store_sql", sql_id: 1, sql: "SELECT ? + 1 AS x" },
        { type: "sequence", sql: "BEGIN; CREATE TABLE seq (a); INSERT INTO seq VALUES (1);" },
        { type: "get_autocommit" },
        { type: "execute", stmt: { sql_id: 1, args: [{ type: "integer", value: "41" }] } },
        { type: "describe", sql: "SELECT a FROM seq" },
        { type: "execute", stmt: { sql_id: 2 } },
      ],
    });
    expect(opened.status).toBe(200);
    const results = opened.body.results as { type: string; response?: unknown; error?: unknown }[];
    expect(results.map((r) => r.type)).toEqual(["ok", "ok", "ok", "ok", "ok", "error"]);
    expect(results[2]?.response).toEqual({ type: "get_autocommit", is_autocommit: false });
    expect(results[3]?.response).toMatchObject({
      type: "execute",
      result: { cols: [{ name: "x", decltype: null }], rows: [[{ type: "integer", value: "42" }]] },
    });
    expect(results[4]?.response).toMatchObject({
      type: "describe",
      result: { cols: [{ name: "a" }], is_readonly: true, is_explain: false },
    });
    const baton = opened.body.baton as string;
    expect(typeof baton).toBe("string");
    const closed = await post({
      baton,
      requests: [{ type: "execute", stmt: { sql: "ROLLBACK" } }, { type: "close" }],
    });
    expect(closed.body.baton).toBeNull();
    // A baton is good once.
    expect((await post({ baton, requests: [{ type: "get_autocommit" }] })).status).toBe(400);
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect((await fetch(`${server.url}/v2`)).status).toBe(401);
  });
});
