/**
 * `npm start` as a user runs it: one SIGTERM or SIGINT to the npm process itself stops the
 * server within 10 s, leaving no server process and nothing on the port; a start after the
 * build compiles nothing. Runs in a temporary copy of the repository (sources first, then the
 * compiled `dist/`, so that the copy is "after the first build"), sharing `node_modules`.
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  utimesSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase } from "./pg-harness.ts";
import { portIsFree, processExists, spawnListening } from "./processes.ts";

const repo = new URL("..", import.meta.url).pathname;

/** The process ids whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const ps = spawnSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" });
  return ps.stdout
    .split("\n")
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0);
}

/** Every process running in folder `dir` (npm, its shell, the server). */
function processesIn(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === dir) found.push(Number(entry));
    } catch {
      // The process ended meanwhile, or is not ours to inspect.
    }
  }
  return found;
}

describe("npm start", () => {
  let copy: string;

  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), "ledger-start-"));
    for (const entry of ["package.json", "tsconfig.json", "tsconfig.build.json"]) {
      cpSync(join(repo, entry), join(copy, entry));
    }
    for (const entry of ["src", "scripts", "sql", "data"]) {
      cpSync(join(repo, entry), join(copy, entry), { recursive: true });
    }
    cpSync(join(repo, "dist"), join(copy, "dist"), { recursive: true });
    // Compiled after its sources, as after `npm ci` (whose `prepare` builds).
    const later = new Date(Date.now() + 60_000);
    const touch = (dir: string) => {
      for (const entry of spawnSync("find", [dir, "-type", "f"], { encoding: "utf8" })
        .stdout.split("\n")
        .filter(Boolean)) {
        utimesSync(entry, later, later);
      }
    };
    touch(join(copy, "dist"));
    symlinkSync(join(repo, "node_modules"), join(copy, "node_modules"));
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s to the npm process stops the server within 10 s and frees the port",
    async (signal) => {
      const data = mkdtempSync(join(tmpdir(), "ledger-start-data-"));
      const database = await freshDatabase(data);
      try {
        const started = performance.now();
        const npm = await spawnListening("npm", ["start"], {
          cwd: copy,
          env: {
            ...process.env,
            ...database.env,
            PORT: "0",
            LOG_LEVEL: "info",
          },
        });
        const startSeconds = (performance.now() - started) / 1000;
        // No compile on a start after the build (tsc alone takes several seconds).
        expect(npm.stdout()).not.toContain("compiling");
        expect(startSeconds).toBeLessThan(5);
        const npmPid = npm.child.pid ?? 0;
        const servers = childrenOf(npmPid);
        expect(servers).toHaveLength(1);
        const serverPid = servers[0] ?? 0;
        expect(processesIn(copy).length).toBeGreaterThan(0);
        expect(await portIsFree(npm.port)).toBe(false);

        const signalled = performance.now();
        process.kill(npmPid, signal);
        const exit = await Promise.race([
          npm.exited,
          new Promise<null>((r) => setTimeout(() => r(null), 10_000)),
        ]);
        const stopSeconds = (performance.now() - signalled) / 1000;
        expect(exit).not.toBeNull();
        expect(stopSeconds).toBeLessThan(10);
        expect(processExists(serverPid)).toBe(false);
        expect(processesIn(copy)).toEqual([]);
        expect(await portIsFree(npm.port)).toBe(true);
        // The server stopped gracefully (its own shutdown line), and npm reports success.
        expect(npm.stdout()).toContain('"msg":"shutting down"');
        expect(exit?.code).toBe(0);
        process.stdout.write(
          `npm start: listening after ${startSeconds.toFixed(2)} s; ${signal}: npm exited after ${stopSeconds.toFixed(2)} s\n`,
        );
      } finally {
        // A failed assertion must not leave this test's processes running: end each by its id.
        for (const pid of processesIn(copy)) process.kill(pid, "SIGKILL");
        await database.drop();
        rmSync(data, { recursive: true, force: true });
      }
    },
    30_000,
  );

  it("prestart compiles only when a source is newer than its compiled file", () => {
    const check = () =>
      spawnSync(process.execPath, ["scripts/build-if-stale.mjs", "--check"], {
        cwd: copy,
        encoding: "utf8",
      });
    expect(check().status).toBe(0);
    const future = new Date(Date.now() + 120_000);
    utimesSync(join(copy, "src", "money.ts"), future, future);
    const stale = check();
    expect(stale.status).toBe(1);
    expect(stale.stdout).toContain("src/money.ts changed");
    const past = new Date(Date.now() - 120_000);
    utimesSync(join(copy, "src", "money.ts"), past, past);
    expect(check().status).toBe(0);
  });
});
