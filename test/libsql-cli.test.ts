/**
 * The `ledger` command against remote libSQL (the Hrana test server in a process of its own),
 * over WebSocket and HTTP: every command prints its result and exits, since the command closes
 * its database clients when it ends (an open WebSocket would keep the process alive). Runs once,
 * on the default (embedded) test run. Needs `npm run build` (dist/).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HranaProcess, spawnHranaServer } from "../scripts/lib/hrana/process.ts";
import { TEST_TARGET } from "./pg-harness.ts";
import { cliPath } from "./processes.ts";

const TOKEN = `cli_${randomBytes(8).toString("hex")}`;

describe.runIf(TEST_TARGET === "sqlite").each(["ws", "http"] as const)(
  "ledger commands over %s",
  (scheme) => {
    let dir: string;
    let server: HranaProcess;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "ledger-libsql-cli-"));
      server = await spawnHranaServer({ path: join(dir, "remote.db"), token: TOKEN });
      env = {
        ...process.env,
        DATABASE_URL: server.url.replace(/^http/, scheme),
        DATABASE_AUTH_TOKEN: TOKEN,
        LOG_LEVEL: "silent",
      };
    });
    afterAll(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Runs `ledger ARGS…`; a command still running after 20 s is killed (status null). */
    const run = (...args: string[]) => {
      const started = performance.now();
      const r = spawnSync(process.execPath, [cliPath, ...args], {
        env,
        encoding: "utf8",
        timeout: 20_000,
      });
      return { ...r, seconds: (performance.now() - started) / 1000 };
    };

    it("runs each command to its end and exits with its output", () => {
      const migrate = run("migrate");
      expect(migrate.signal).toBeNull();
      expect(migrate.status).toBe(0);
      expect(migrate.stdout).toBe("migrations applied\n");

      const created = run("keys", "create", "--project", "remote", "--json");
      expect(created.status).toBe(0);
      const key = JSON.parse(created.stdout) as {
        projectId: string;
        keyId: string;
        apiKey: string;
      };
      expect(key.apiKey).toMatch(/^ldg_/);

      const listed = run("keys", "list", "--json");
      expect(listed.status).toBe(0);
      const list = JSON.parse(listed.stdout) as { keys: { keyId: string; revokedAt: null }[] };
      expect(list.keys.map((k) => k.keyId)).toContain(key.keyId);

      const seeded = run("models", "seed");
      expect(seeded.status).toBe(0);
      expect(seeded.stdout).toMatch(/^\d+ models loaded\n$/);

      const revoked = run("keys", "revoke", key.keyId);
      expect(revoked.status).toBe(0);
      expect(revoked.stdout).toBe(`key ${key.keyId} revoked\n`);

      const verified = run("verify");
      expect(verified.status).toBe(0);
      expect(verified.stdout).toBe("verified 0 accounts, 0 transactions: OK\n");

      // Each command ended on its own, long before the 20 s kill.
      for (const r of [migrate, created, listed, seeded, revoked, verified]) {
        expect(r.signal).toBeNull();
        expect(r.seconds).toBeLessThan(15);
      }
    }, 120_000);

    it("refuses the embedded-file commands with a message, and exits", () => {
      const backup = run("backup", join(dir, "copy.db"));
      expect(backup.signal).toBeNull();
      expect(backup.status).toBe(1);
      expect(backup.stderr).toMatch(/^ledger: /);
    });

    it("says where and why when the server cannot be reached as `serve` starts, and exits", async () => {
      const port = server.port;
      const stopped = { ...env, DATABASE_URL: `${scheme}://127.0.0.1:${port}` };
      await server.stop();
      try {
        const r = spawnSync(process.execPath, [cliPath, "serve"], {
          env: { ...stopped, PORT: "0" },
          encoding: "utf8",
          timeout: 20_000,
        });
        expect(r.signal).toBeNull();
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(
          new RegExp(
            `^ledger: database: [^\\n]+\nledger: cannot reach the database at ${scheme}://127\\.0\\.0\\.1:${port}/ \\(.+\\); check DATABASE_URL and that the server is running\n$`,
          ),
        );
        expect(r.stderr).not.toMatch(/Idempotency-Key|retry later/);
      } finally {
        server = await spawnHranaServer({ path: join(dir, "remote.db"), token: TOKEN, port });
      }
    }, 60_000);
  },
);
