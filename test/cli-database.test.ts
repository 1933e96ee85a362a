/**
 * The CLI's seams (docs/operations.md#command-line), as real processes of the built `ledger`
 * (`npm run build` first): `--version`, the database each command names on standard error
 * (never a password or token), the rule that only serve, migrate and keys create create a
 * missing database file, and the start line of `ledger serve` (the address as bound, the
 * console and docs URLs, JSON only on standard output). On the test engine: a file, or a
 * PostgreSQL database.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listenUrls } from "../src/server.ts";
import { type FreshDatabase, freshDatabase, TEST_TARGET } from "./pg-harness.ts";
import { jsonLines, runCli, spawnServer } from "./processes.ts";

let dir: string;
let database: FreshDatabase;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-cli-db-"));
  database = await freshDatabase(dir);
  env = { ...process.env, ...database.env, LOG_LEVEL: "info" };
});

afterEach(async () => {
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

const run = (...args: string[]) => runCli(args, env);

describe("ledger --version", () => {
  it("prints the package's version and touches no database", () => {
    // The test database's own files (remote libSQL keeps its server's file here) stay as they are.
    const before = readdirSync(dir);
    const { version } = JSON.parse(
      readFileSync(new URL("../package.json", import.meta.url), "utf8"),
    ) as { version: string };
    for (const flag of ["--version", "-V"]) {
      const r = run(flag);
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(version);
      expect(r.stderr).toBe("");
    }
    expect(readdirSync(dir)).toEqual(before);
  });
});

describe("the database a command uses", () => {
  it("is named on stderr, without a password", () => {
    const r = run("migrate");
    expect(r.status).toBe(0);
    const named = /ledger: database: (.*)/.exec(r.stderr)?.[1];
    if (TEST_TARGET === "sqlite") {
      expect(named).toBe(`SQLite file ${join(dir, "ledger.db")}`);
    } else if (TEST_TARGET === "libsql") {
      const url = new URL(database.url);
      expect(named).toBe(`remote libSQL database at ${url.hostname}:${url.port}`);
    } else {
      const url = new URL(database.url);
      const name = url.pathname.slice(1);
      expect(named).toBe(`PostgreSQL database ${name} at ${url.hostname}:${url.port || "5432"}`);
      // The line is all of stderr: no URL, user or password anywhere.
      expect(r.stderr).toBe(`ledger: database: ${named}\n`);
      expect(r.stderr).not.toContain(`${url.username}:${url.password}@`);
    }
    for (const args of [["keys", "list"], ["verify"]]) {
      const again = run(...args);
      expect(again.status, again.stderr).toBe(0);
      expect(again.stderr).toContain(`ledger: database: ${named}`);
    }
  });
});

describe.runIf(TEST_TARGET === "sqlite")("a missing database file", () => {
  // `restore` creates a missing database, when it succeeds (test/backup.test.ts, "ledger restore").
  it("is refused by verify, keys list/revoke, models and backup, creating nothing", () => {
    const file = join(dir, "elsewhere", "ledger.db");
    env = { ...env, DATABASE_URL: `file:${file}` };
    const refused = [
      ["verify"],
      ["keys", "list"],
      ["keys", "revoke", "key_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
      ["models", "seed"],
      ["backup", join(dir, "copy.db")],
    ];
    for (const args of refused) {
      const r = run(...args);
      expect(r.status, args.join(" ")).not.toBe(0);
      expect(r.stderr, args.join(" ")).toContain(`no database file at ${file}`);
      expect(r.stdout, args.join(" ")).not.toContain("OK");
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(file)).toBe(false);
  });

  it("is created by migrate and keys create, after which verify passes", () => {
    const migrated = join(dir, "a", "ledger.db");
    env = { ...env, DATABASE_URL: `file:${migrated}` };
    expect(run("migrate").status).toBe(0);
    expect(existsSync(migrated)).toBe(true);
    const verified = run("verify");
    expect(verified.status).toBe(0);
    expect(verified.stdout).toContain("verified 0 accounts, 0 transactions: OK");

    const keyed = join(dir, "b", "ledger.db");
    env = { ...env, DATABASE_URL: `file:${keyed}` };
    expect(run("keys", "create", "--project", "acme", "--json").status).toBe(0);
    expect(existsSync(keyed)).toBe(true);
    expect(run("keys", "list").stdout).toContain("acme");
  });
});

describe("ledger serve's start", () => {
  it("names the address as bound and the console and docs URLs; stdout is JSON only", async () => {
    const server = await spawnServer({ ...env, HOST: "127.0.0.1", PORT: "0" });
    try {
      const start = `http://127.0.0.1:${server.port}`;
      expect(server.stderr()).toContain(
        `Credit ledger listening on ${start} (console: ${start}/console, docs: ${start}/docs)`,
      );
      expect(server.stderr()).toContain("ledger: database: ");
      expect((await fetch(`${server.base}/health`)).status).toBe(200);
      expect((await fetch(`${server.base}/v1/accounts`)).status).toBe(401);
      await new Promise((r) => setTimeout(r, 200));
      const out = server.stdout();
      const afterKey = out.slice(out.indexOf('{"level"'));
      const lines = jsonLines(afterKey);
      expect(afterKey.trim().split("\n")).toHaveLength(lines.length);
      expect(lines.find((l) => l.msg === "listening")).toMatchObject({
        address: "127.0.0.1",
        port: server.port,
        url: start,
        console: `${start}/console`,
        docs: `${start}/docs`,
      });
      const routes = lines.filter((l) => l.msg === "request").map((l) => l.route);
      expect(routes).toEqual(["/v1/accounts"]);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("names a wildcard address as such, with loopback URLs for the console and docs", () => {
    // Computed, not bound: tests listen on loopback only.
    expect(listenUrls("0.0.0.0", 3000)).toEqual({
      url: "http://0.0.0.0:3000",
      console: "http://127.0.0.1:3000/console",
      docs: "http://127.0.0.1:3000/docs",
    });
    expect(listenUrls("::", 3000).url).toBe("http://[::]:3000");
    expect(listenUrls("::1", 8080).console).toBe("http://[::1]:8080/console");
  });
});

describe(".gitignore", () => {
  it("covers WAL files and restore leftovers beside a database", () => {
    const root = new URL("..", import.meta.url).pathname;
    const names = [
      "data/ledger.db-wal",
      "data/ledger.db-shm",
      "elsewhere/books.sqlite-wal",
      "data/ledger.db.before-restore-20261127T031500Z",
    ];
    const ignored = execFileSync("git", ["check-ignore", "--no-index", ...names], {
      cwd: root,
      encoding: "utf8",
    });
    expect(ignored.trim().split("\n")).toEqual(names);
  });
});
